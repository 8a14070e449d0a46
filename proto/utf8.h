/*
 * utf8.h -- the one UTF-8 validator: batonctl's printers, batond's JSON
 * log lines and its metric label values all keep valid UTF-8 as is and
 * escape every other byte.
 */
#ifndef BATON_PROTO_UTF8_H
#define BATON_PROTO_UTF8_H

#include <stddef.h>

/*
 * Length of the valid UTF-8 sequence at s[0..n) (1 to 4), or 0 if s does
 * not start one (n must be at least 1). Follows RFC 3629: no overlong
 * forms, no surrogates (U+D800..U+DFFF), nothing above U+10FFFF.
 */
size_t proto_utf8_len(const unsigned char *s, size_t n);

#endif
