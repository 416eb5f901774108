#!/usr/bin/env python3
# chain_flows.py: flows.py's client and summary, plus one count per failure
# step, for a chain of failovers (tests/failover/chain3.sh).
#
#   chain_flows.py client ...   (flows.py client's options)
#   chain_flows.py summary FILE
#
# flows.py's "marks" only look at the connections that survive the whole
# run.  The client's JSON here also has "steps", one per line of the mark
# file, over every established long connection:
#   t             the mark (unix time)
#   came_through  connections with an echo after t, not lost before the next
#                 mark (or the end), and an echo within the last --dead-after
#                 seconds before it: they were flowing when the next step began
#   never_resumed connections alive at t that got no echo after it
#   lost          connections reset, closed or failed between t and the next mark
# A connection that dies at step k is thus counted once, at step k.

import bisect
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flows  # noqa: E402  (tests/lib/flows.py, next to this file)

_analyse = flows.analyse


def step_stats(conns, t, t_next, dead_after):
    through = never = lost = 0
    for c in conns:
        if c.lost_at is not None and c.lost_at <= t:
            continue  # gone before this step: counted at an earlier one
        arr = c.arr
        k = bisect.bisect_right(arr, t)
        if c.lost_at is not None and c.lost_at <= t_next:
            lost += 1
            continue
        if k == len(arr) or arr[k] > t_next:
            never += 1
            continue
        last = arr[bisect.bisect_right(arr, t_next) - 1]
        if last >= t_next - dead_after:
            through += 1
        else:
            never += 1
    return {"t": t, "came_through": through, "never_resumed": never, "lost": lost}


def analyse(run, conns, shorts, t_start, t_ready, t_end):
    out = _analyse(run, conns, shorts, t_start, t_ready, t_end)
    marks, _ = flows.read_marks(run.args.mark_file)
    out["steps"] = [step_stats(conns, t, nxt, run.args.dead_after)
                    for t, nxt in zip(marks, marks[1:] + [t_end])]
    return out


flows.analyse = analyse

if __name__ == "__main__":
    sys.exit(flows.main())
