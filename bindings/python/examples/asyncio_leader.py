#!/usr/bin/env python3
"""An asyncio service that does its work only while it leads an election.

    python3 asyncio_leader.py --endpoints 127.0.0.1:7001,... --name svc [--id ID]

Every copy campaigns in election NAME with its ID as the value; the one that
leads runs the work (here: a tick every --tick seconds, each stamped with the
leader's term, its fence, which a real service passes to what it writes) and
stops it the moment leadership is lost (hold.lost: its session expired, or
an operator forced the release), then campaigns again. The others wait in
the election's queue and take over, in order, when the leader resigns or
dies (after its session's lease, --ttl). SIGINT / SIGTERM resign and exit.

It prints one line per step: "leading ID term T", "work ID term T tick N",
"lost ID term T", "resigned ID".
"""
import argparse
import asyncio
import os
import signal
import sys

try:
    import baton
except ImportError:  # not installed: the source tree's package
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    import baton
import baton.aio  # noqa: E402


def say(*words):
    print(*words, flush=True)


async def work(me: str, lead: baton.aio.Hold, tick: float):
    """The service's work: runs only while this copy leads."""
    n = 0
    while True:
        lead.check()  # raises baton.ELOST once leadership is lost
        n += 1
        say("work", me, "term", lead.fence, "tick", n)
        await asyncio.sleep(tick)


async def lead_once(client, args, stop: asyncio.Event) -> bool:
    """Campaign, lead until leadership is lost or we are told to stop;
    returns whether to go on."""
    campaign = asyncio.ensure_future(client.campaign(args.name, args.id))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({campaign, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if not campaign.done():
        campaign.cancel()  # withdrawn from the queue: nothing stays held
        await asyncio.gather(campaign, return_exceptions=True)
        return False
    lead = campaign.result()  # raises what the campaign raised
    say("leading", args.id, "term", lead.fence)
    job = asyncio.ensure_future(work(args.id, lead, args.tick))
    lost = asyncio.ensure_future(lead.wait_lost())
    stopping = asyncio.ensure_future(stop.wait())
    await asyncio.wait({job, lost, stopping}, return_when=asyncio.FIRST_COMPLETED)
    for t in (job, lost, stopping):
        t.cancel()
    await asyncio.gather(job, lost, stopping, return_exceptions=True)
    try:
        await lead.unlock()  # resign (or free the record of a lost term)
    except (baton.ELOST, baton.ENOTHELD):
        say("lost", args.id, "term", lead.fence)
        return not stop.is_set()
    say("resigned", args.id)
    return not stop.is_set()


async def main(args) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with baton.aio.connect(args.endpoints, client_name="leader-" + args.id,
                                 session_ttl=args.ttl, tls_ca=args.cacert,
                                 token=os.environ.get("BATON_TOKEN")) as client:
        while not stop.is_set():
            try:
                if not await lead_once(client, args, stop):
                    break
            except (baton.ESESSION, baton.EUNAVAIL, baton.ETIMEDOUT) as e:
                # the session ended or the cluster was out of reach while we
                # campaigned: the next campaign opens a fresh session
                say("retry", args.id, e.name)
                await asyncio.sleep(0.5)
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--endpoints", required=True)
    ap.add_argument("--name", required=True, help="the election")
    ap.add_argument("--id", default="%s-%d" % (os.uname().nodename, os.getpid()),
                    help="who this copy is: the election's value while it leads")
    ap.add_argument("--ttl", type=float, default=None,
                    help="session lease in seconds (how long a dead leader keeps it)")
    ap.add_argument("--tick", type=float, default=0.5)
    ap.add_argument("--cacert", default=None, help="TLS CA file (token: $BATON_TOKEN)")
    sys.exit(asyncio.run(main(ap.parse_args())))
