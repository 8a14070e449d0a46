module baton

go 1.19
