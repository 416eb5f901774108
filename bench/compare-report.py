#!/usr/bin/env python3
"""Helper of bench/compare.sh: timed polling of the daemons, and the report.

Subcommands (compare.sh calls them; run with --help for the options):

  measure  start a command (ctload create, a client request, ...), poll a
           count every INTERVAL seconds until it reaches a target or a
           timeout, and print one JSON object with the timings.
  lag      start a paced `ctload create --rate`, sample the primary's kernel
           count and the backup's external cache together, and estimate the
           replication lag from the two curves.
  report   read results.csv, append the summary rows (median, min, max),
           print the comparison table and write the gnuplot figures.

Counts come from the daemons' own clients, so the same code serves ctsyncd
(`-s cache --json`) and conntrackd 1.4.7 (`-s cache`, text), and from
`ctload count --stats` for a kernel table (the namespace this script runs in).
"""

import argparse
import csv
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

CLIENT_TIMEOUT = 10.0  # seconds a single client request may take


# --------------------------------------------------------------------------
# counts
# --------------------------------------------------------------------------

def run_out(argv, timeout=CLIENT_TIMEOUT):
    """Output of argv, or None if it failed or took too long."""
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           timeout=timeout, text=True)
    except (subprocess.TimeoutExpired, OSError):
        return None
    return p.stdout if p.returncode == 0 else None


def conntrackd_external(text):
    """(active, active + updated) of the external cache in `conntrackd -s cache` text."""
    if text is None or 'cache:external' not in text:
        return None
    sec = text.split('cache:external', 1)[1]
    act = re.search(r'active objects:\s*(\d+)', sec)
    upd = re.search(r'update OK/failed:\s*(\d+)\s*/', sec)
    if not act or not upd:
        return None
    return int(act.group(1)), int(act.group(1)) + int(upd.group(1))


def external(daemon, client, conf):
    """(active, active + updated) of the backup's external cache, or None.

    An update for a state the backup does not have creates it instead, so
    an update burst has converged when updated + active has grown by N."""
    if daemon == 'ctsyncd':
        out = run_out([client, '-C', conf, '-s', 'cache', '--json'])
        if out is None:
            return None
        try:
            d = json.loads(out)['external_cache']
            return int(d['active']), int(d['active']) + int(d['updated'])
        except (ValueError, KeyError, TypeError):
            return None
    return conntrackd_external(run_out([client, '-C', conf, '-s', 'cache']))


def kernel_count(ctload):
    """Entries in this namespace's conntrack table (the kernel's counter)."""
    out = run_out([ctload, 'count', '--stats', '--json'])
    try:
        return int(json.loads(out)['entries'])
    except (TypeError, ValueError, KeyError):
        return None


def make_sampler(args):
    """A function returning the polled value (or None), per --what."""
    if args.what == 'kernel':
        return lambda: kernel_count(args.ctload)
    idx = 0 if args.what == 'active' else 1
    def sample():
        r = external(args.daemon, args.client, args.conf)
        return None if r is None else r[idx]
    return sample


# --------------------------------------------------------------------------
# measure
# --------------------------------------------------------------------------

def poll_interval(args, t):
    """Seconds until the next sample.  By default it grows with the time
    already waited (5 % of it, between 20 ms and 1 s): timings keep a
    relative precision of about 5 %, and a long wait does not load the
    polled daemon with thousands of requests (their CPU counts in the
    daemon's figures)."""
    if args.interval:
        return args.interval
    return min(1.0, max(0.02, 0.05 * t))


def cmd_measure(args):
    """Start the command, poll until the value reaches the target.

    For --what updated the target is counted from the value read before the
    command starts.  With --down the value must fall to the target (deletes,
    flushes); progress is then measured from the starting value.  All times
    are seconds since the command was started.
    """
    sample = make_sampler(args)
    base = 0
    if args.what == 'updated':
        for _ in range(50):
            v = sample()
            if v is not None:
                base = v
                break
            time.sleep(0.1)
    start = None
    if args.down:
        start = sample()
    marks = sorted(float(m) for m in args.marks.split(',')) if args.marks else []
    at_mark = {}
    res = {'target': args.target, 'reached': False, 't_done': None, 't_99': None,
           'last': None, 'fraction': 0.0, 'samples': 0, 'cmd_rc': None,
           't_cmd_end': None, 'cmd_out': ''}

    def progress(v):
        if args.down:
            s = start if start is not None else v
            if s <= args.target:
                return 1.0
            return max(0.0, (s - v) / (s - args.target))
        return (v - base) / args.target if args.target > 0 else 1.0

    t0 = time.monotonic()
    proc = subprocess.Popen(args.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True) if args.cmd else None
    out_chunks = []
    deadline = t0 + args.timeout
    last_change = t0
    while True:
        if proc is not None and res['cmd_rc'] is None and proc.poll() is not None:
            res['cmd_rc'] = proc.returncode
            res['t_cmd_end'] = time.monotonic() - t0
            out_chunks.append(proc.stdout.read())
        ts = time.monotonic()
        v = sample()
        te = time.monotonic()
        t = (ts + te) / 2 - t0  # the sample is taken somewhere within the call
        if v is None:
            # no answer within CLIENT_TIMEOUT: the daemon is busy, which is
            # not a stall
            last_change = te
        else:
            res['samples'] += 1
            if v != res['last']:
                last_change = te
            res['last'] = v
            f = progress(v)
            res['fraction'] = f
            for m in marks:
                if t <= m:
                    at_mark[m] = f
            if res['t_99'] is None and f >= 0.99:
                res['t_99'] = t
            if f >= 1.0 and (args.wait_cmd is False or proc is None or res['cmd_rc'] is not None):
                res['reached'] = True
                res['t_done'] = t
                break
        if te >= deadline:
            break
        if (args.stall and (proc is None or res['cmd_rc'] is not None)
                and te - last_change >= args.stall):
            res['stalled'] = True
            break
        time.sleep(max(0.0, poll_interval(args, te - t0) - (time.monotonic() - ts)))
    if proc is not None and res['cmd_rc'] is None:
        try:
            o, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            out_chunks.append(o)
            res['cmd_rc'] = proc.returncode
            res['t_cmd_end'] = time.monotonic() - t0
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            res['cmd_rc'] = 'killed'
    # a mark the run outlived without sampling after it keeps the last value
    for m in marks:
        if res['reached'] and (res['t_done'] or 0) <= m:
            at_mark[m] = 1.0
        res['at_%g' % m] = at_mark.get(m, res['fraction'])
    res['cmd_out'] = ''.join(c for c in out_chunks if c).strip().splitlines()[-1:] or ['']
    res['cmd_out'] = res['cmd_out'][0]
    res['elapsed'] = time.monotonic() - t0
    print(json.dumps(res))
    # the second line is for the shell (`read`): fixed order, '-' for none
    res.setdefault('stalled', False)
    keys = (['reached', 't_done', 't_99', 'last', 'fraction', 'elapsed', 'stalled']
            + ['at_%g' % m for m in marks])
    print(' '.join(shell_word(res.get(k)) for k in keys))
    return 0


def shell_word(v):
    if v is None:
        return '-'
    if isinstance(v, bool):
        return '1' if v else '0'
    if isinstance(v, float):
        return '%.6g' % v
    return str(v)


# --------------------------------------------------------------------------
# lag
# --------------------------------------------------------------------------

def first_time(curve, k):
    """Time at which a non-decreasing sampled curve [(t, v)] first reaches k,
    interpolated linearly between the two samples around it; None if never."""
    prev = None
    for t, v in curve:
        if v >= k:
            if prev is None or v == prev[1]:
                return t
            pt, pv = prev
            return pt + (t - pt) * (k - pv) / (v - pv)
        prev = (t, v)
    return None


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float('nan')
    i = q * (len(xs) - 1)
    lo, hi = math.floor(i), math.ceil(i)
    return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)


def cmd_lag(args):
    """Replication lag under steady, paced load.

    While `ctload create M --rate R` runs in the primary's namespace (this
    one), each sample reads A(t), the primary's kernel count, and right
    after it B(t), the backup's external count.  Each is stamped with the
    end time of its request: starting the client is most of a request and
    the count is read at its end.  Both curves rise.  For every k on a grid
    of 200 points up to what B reached, lag(k) = tB(k) - tA(k), with each
    time interpolated linearly between the two samples around k: how long
    after the k-th state existed in A's kernel the k-th state was in B's
    cache.  The quantiles of lag(k) are reported.  The paced creation makes
    A(t) nearly a straight line, so the interpolation is good on that side;
    the error is of the order of one client request (a few ms), and lags
    below that are not resolved.
    """
    t0 = time.monotonic()
    proc = subprocess.Popen(args.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    a_curve, b_curve, call_ms = [], [], []
    deadline = None
    cmd_end = None
    while True:
        if cmd_end is None and proc.poll() is not None:
            cmd_end = time.monotonic() - t0
            deadline = time.monotonic() + args.drain
        ts = time.monotonic()
        a = kernel_count(args.ctload)
        tm = time.monotonic()
        r = external(args.daemon, args.client, args.conf)
        te = time.monotonic()
        # each request spends most of its time starting the client; the
        # count itself is read at the end of it, so that is its time
        if a is not None:
            a_curve.append((tm - t0, a))
        if r is not None:
            b_curve.append((te - t0, r[0]))
            call_ms.append((te - tm) * 1000)
            if r[0] >= args.target:
                break
        if deadline is not None and te >= deadline:
            break
        if te - t0 > args.hard_timeout:
            break
        time.sleep(max(0.0, (args.interval or 0.05) - (time.monotonic() - ts)))
    if proc.poll() is None:
        proc.kill()
    out = (proc.communicate()[0] or '').strip()
    # curves are made monotone (a count never goes down in this test)
    def mono(c):
        m, r = 0, []
        for t, v in c:
            m = max(m, v)
            r.append((t, m))
        return r
    a_curve, b_curve = mono(a_curve), mono(b_curve)
    b_max = b_curve[-1][1] if b_curve else 0
    lags = []
    top = min(b_max, args.target)
    for i in range(1, 201):
        k = top * i / 200
        if k <= 0:
            continue
        ta, tb = first_time(a_curve, k), first_time(b_curve, k)
        if ta is not None and tb is not None:
            lags.append(tb - ta)
    res = {'target': args.target, 'reached': b_max >= args.target,
           'fraction': b_max / args.target if args.target else 1.0,
           'p50_ms': quantile(lags, 0.5) * 1000, 'p99_ms': quantile(lags, 0.99) * 1000,
           'max_ms': max(lags) * 1000 if lags else float('nan'),
           'samples': len(b_curve),
           'call_ms_median': statistics.median(call_ms) if call_ms else float('nan'),
           'cmd_end': cmd_end, 'cmd_out': out.splitlines()[-1] if out else ''}
    if args.curves:
        with open(args.curves, 'w') as f:
            f.write('# t_s side count\n')
            for t, v in a_curve:
                f.write('%.4f A %d\n' % (t, v))
            for t, v in b_curve:
                f.write('%.4f B %d\n' % (t, v))
    print(json.dumps(res))
    print(' '.join(shell_word(res[k]) for k in ('p50_ms', 'p99_ms', 'fraction')))
    return 0


# --------------------------------------------------------------------------
# report
# --------------------------------------------------------------------------

# metric id -> (label, unit, target description, how the target is checked)
# The order is the order of the table.
METRICS = [
    ('repl_time', 'replication: create N until B holds N', 's', ''),
    ('repl_99', 'replication: until B holds 99 % of N', 's', ''),
    ('repl_rate', 'replication rate', 'states/s', ''),
    ('repl_lost', 'replication: states missing at timeout', 'states', '0'),
    ('cpu_a', 'CPU on A per 1000 states replicated', 'ms', '<= 1/4 conntrackd'),
    ('cpu_b', 'CPU on B per 1000 states replicated', 'ms', '<= 1/4 conntrackd; <= 0.5'),
    ('cpu_a_sched', 'the same on A by scheduler runtime', 'ms', ''),
    ('cpu_b_sched', 'the same on B by scheduler runtime', 'ms', ''),
    ('rss_start_a', 'RSS of A before the create', 'KiB', ''),
    ('rss_start_b', 'RSS of B before the create', 'KiB', ''),
    ('rss_a', 'RSS growth on A per state', 'B', '<= 128'),
    ('rss_b', 'RSS growth on B per state', 'B', '<= 128'),
    ('wire_ab', 'sync link A->B per state (frames)', 'B', '<= 75'),
    ('wire_both', 'sync link both ways per state', 'B', ''),
    ('dgram_ab', 'datagrams A->B per 1000 states', 'dgrams', ''),
    ('dgram_size_ab', 'sync link A->B per datagram (frames)', 'B', ''),
    ('dgram_over_ab', 'sync link A->B per datagram beyond the sync messages', 'B', ''),
    ('update_time', 'update burst: converged on B', 's', ''),
    ('update_rate', 'update burst rate', 'states/s', ''),
    ('delete_time', 'delete burst: converged on B', 's', ''),
    ('delete_rate', 'delete burst rate', 'states/s', ''),
    ('overruns', 'netlink overruns (A+B, whole trial)', 'count', '0'),
    ('handshake_time', 'keyed: both sessions proven after the start', 's', ''),
    ('commit_time', 'commit of N on B (-c)', 's', ''),
    ('commit_rate', 'commit rate', 'states/s', ''),
    ('raw_rate', 'raw create rate (ctload raw-rate)', 'states/s', ''),
    ('commit_ratio', 'commit rate / raw create rate', 'x', '>= 0.8'),
    ('commit_cpu', 'CPU on B for the commit, per 1000 states', 'ms', ''),
    ('resync_time', 'bulk resync: -f external, -n on B', 's', ''),
    ('resync_rate', 'bulk resync rate', 'states/s', '>= 1.2 M'),
    ('resync_cpu_a', 'bulk resync: CPU on A per 1000 states', 'ms', ''),
    ('resync_cpu_b', 'bulk resync: CPU on B per 1000 states', 'ms', ''),
    ('resync_cpu', 'bulk resync: CPU on A + B per 1000 states', 'ms', '<= 1/2 conntrackd'),
    ('loss_time', 'convergence under loss', 's', '100 % converged'),
    ('loss_frac60', 'under loss: fraction on B after 60 s', '%', '100'),
    ('loss_frac120', 'under loss: fraction on B after 120 s', '%', '100'),
    ('lag_p50', 'replication lag under steady load, p50', 'ms', ''),
    ('lag_p99', 'replication lag under steady load, p99', 'ms', ''),
    ('lag_reached', 'steady load: fraction on B at the end', '%', '100'),
]
LABEL = {m[0]: m for m in METRICS}
FIELDS = ['metric', 'n', 'param', 'daemon', 'rep', 'value', 'ok', 'unit', 'note']


def fmt(v, unit):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return '-'
    a = abs(v)
    if unit in ('states/s',):
        if a >= 1e6:
            return '%.2fM' % (v / 1e6)
        if a >= 1e3:
            return '%.0fk' % (v / 1e3) if a >= 1e4 else '%.1fk' % (v / 1e3)
        return '%.0f' % v
    if unit in ('count', 'states') and float(v).is_integer():
        return '%d' % v
    if a >= 100:
        return '%.0f' % v
    if a >= 10:
        return '%.1f' % v
    if a >= 1:
        return '%.2f' % v
    return '%.3f' % v


def nfmt(n):
    n = int(n)
    if n >= 1000000 and n % 1000000 == 0:
        return '%dM' % (n // 1000000)
    if n >= 1000 and n % 1000 == 0:
        return '%dk' % (n // 1000)
    return str(n)


def cell(rows, unit):
    """'median [min-max]' of the rows that succeeded, plus the failures."""
    good = [float(r['value']) for r in rows if r['ok'] == '1' and r['value'] not in ('', 'nan')]
    bad = [r for r in rows if r['ok'] != '1']
    if not rows:
        return '', None
    txt = ''
    med = None
    if good:
        med = statistics.median(good)
        txt = fmt(med, unit)
        if len(good) > 1:
            txt += ' [%s-%s]' % (fmt(min(good), unit), fmt(max(good), unit))
    if bad:
        txt += ('; ' if txt else '') + '%d/%d %s' % (len(bad), len(rows), summarize_notes(bad))
    return txt, med


def summarize_notes(bad):
    """'stalled at 99.9 % (...)' notes of failed runs, folded into one
    'stalled at 99.94-99.98 %' when they differ only in the number."""
    notes = [r['note'] for r in bad if r['note']]
    if not notes:
        return 'failed'
    pat = re.compile(r'^(.*?)([0-9.]+) %(.*)$')
    ms = [pat.match(n) for n in notes]
    if all(ms) and len({(m.group(1), m.group(3)) for m in ms}) == 1:
        vals = sorted(float(m.group(2)) for m in ms)
        rng = ('%g' % vals[0]) if vals[0] == vals[-1] else '%g-%g' % (vals[0], vals[-1])
        return '%s%s %%%s' % (ms[0].group(1), rng, ms[0].group(3))
    return '; '.join(sorted(set(notes)))


KEYED = 'ctsyncd-keyed'
DAEMONS = ('ctsyncd', 'conntrackd', KEYED)

# The keyed ctsyncd against the unkeyed one (issue 15): metric, how the two
# medians compare ('ratio' keyed / unkeyed, or 'diff' keyed - unkeyed), and
# the target and its limit, or None.  'over_per_state' is derived: the
# bytes a keyed datagram carries beyond an unkeyed one's (dgram_over_ab),
# times the keyed datagrams per state (dgram_ab): what keying costs per
# state, free of the trial-to-trial spread of the datagrams' fill that
# the bytes per state (wire_ab) of two trials have.
KEYED_ROWS = [
    ('cpu_a', 'ratio', '<= 1.15x', 1.15),
    ('cpu_b', 'ratio', '<= 1.15x', 1.15),
    ('resync_cpu', 'ratio', '', None),
    ('commit_cpu', 'ratio', '', None),
    ('repl_time', 'ratio', '', None),
    ('dgram_over_ab', 'diff', '<= +40 B', 40),
    ('over_per_state', 'value', '', None),
    ('wire_ab', 'diff', '', None),
    ('dgram_ab', 'ratio', '', None),
    ('dgram_size_ab', 'diff', '', None),
    ('rss_start_a', 'diff', '', None),
    ('rss_start_b', 'diff', '', None),
    ('rss_a', 'diff', '', None),
    ('rss_b', 'diff', '', None),
    ('loss_time', 'ratio', '', None),
    ('loss_frac60', 'diff', '', None),
    ('loss_frac120', 'diff', '', None),
    ('lag_p50', 'diff', '', None),
    ('lag_p99', 'diff', '', None),
    ('lag_reached', 'diff', '', None),
]
EXTRA_LABEL = 'the same per state (x keyed datagrams per state), B'


def good_values(rs):
    return [float(r['value']) for r in rs if r['ok'] == '1' and r['value'] not in ('', 'nan')]


def by_rep(rs):
    """{rep: value} of the rows that succeeded."""
    return {r['rep']: float(r['value']) for r in rs
            if r['ok'] == '1' and r['value'] not in ('', 'nan')}


def render(head, table, markdown):
    widths = [max(len(str(r[i])) for r in table + [head]) for i in range(len(head))]
    lines = []
    if markdown:
        lines.append('| ' + ' | '.join(head) + ' |')
        lines.append('|' + '|'.join('-' * (w + 2) for w in widths) + '|')
        for r in table:
            lines.append('| ' + ' | '.join(str(c) for c in r) + ' |')
    else:
        lines.append('  '.join(h.ljust(w) for h, w in zip(head, widths)))
        lines.append('  '.join('-' * w for w in widths))
        for r in table:
            lines.append('  '.join(str(c).ljust(w) for c, w in zip(r, widths)))
    return '\n'.join(lines) + '\n'


def size_of(n, p):
    size = nfmt(n) if n else ''
    if p:
        size += ' ' + p
    return size.strip()


def keyed_table(groups):
    """Rows of the keyed-against-unkeyed table: metric, N, unkeyed, keyed,
    change (median against median), the same per repetition [min-max]
    (each keyed trial against the unkeyed one of the same repetition, which
    ran right before or after it), target, verdict."""
    def change(mode, u, k):
        if u is None or k is None:
            return None
        if mode == 'ratio':
            return k / u if u else None
        return k - u

    def show(mode, v, unit):
        if v is None:
            return '-'
        if mode == 'ratio':
            return '%.3fx' % v
        return ('+' if v >= 0 else '') + fmt(v, unit) + ' ' + unit

    table = []
    for m, mode, target, limit in KEYED_ROWS:
        if m == 'over_per_state':
            keys = sorted((k for k in groups if k[0] == 'dgram_over_ab'),
                          key=lambda k: (int(k[1] or 0), k[2]))
        else:
            keys = sorted((k for k in groups if k[0] == m),
                          key=lambda k: (int(k[1] or 0), k[2]))
        for key in keys:
            _, n, p = key
            if m == 'over_per_state':
                unit = 'B'
                ou = groups[key].get('ctsyncd', [])
                ok_ = groups[key].get(KEYED, [])
                dk = groups.get(('dgram_ab', n, p), {}).get(KEYED, [])
                if not ou or not ok_ or not dk:
                    continue
                mu, mk, md = (statistics.median(good_values(x)) if good_values(x) else None
                              for x in (ou, ok_, dk))
                val = (mk - mu) * md / 1000 if None not in (mu, mk, md) else None
                ru, rk, rd = by_rep(ou), by_rep(ok_), by_rep(dk)
                pairs = [(rk[r] - ru[r]) * rd[r] / 1000 for r in rk if r in ru and r in rd]
                label = EXTRA_LABEL
                uc, kc = '', ''
                shown = show('diff', val, unit)
                pshow = ''
                if len(pairs) > 1:
                    pshow = '[%s .. %s]' % (show('diff', min(pairs), unit), show('diff', max(pairs), unit))
            else:
                label, unit = LABEL.get(m, (m, m, 'x', ''))[1:3]
                ru_rows = groups[key].get('ctsyncd', [])
                rk_rows = groups[key].get(KEYED, [])
                if not rk_rows or not ru_rows:
                    continue
                uc, mu = cell(ru_rows, unit)
                kc, mk = cell(rk_rows, unit)
                val = change(mode, mu, mk)
                shown = show(mode, val, unit)
                ru, rk = by_rep(ru_rows), by_rep(rk_rows)
                pairs = [change(mode, ru[r], rk[r]) for r in rk if r in ru]
                pairs = [x for x in pairs if x is not None]
                pshow = ''
                if len(pairs) > 1:
                    pshow = '[%s .. %s]' % (show(mode, min(pairs), unit), show(mode, max(pairs), unit))
                label = '%s, %s' % (label, unit)
            verdict = ''
            if limit is not None:
                verdict = '-' if val is None else ('met' if val <= limit else 'MISSED')
            table.append((label, size_of(n, p), uc or '-', kc or '-', shown, pshow, target, verdict))
    return table


def cmd_report(args):
    with open(args.csv, newline='') as f:
        rows = [r for r in csv.DictReader(f) if r['rep'] not in ('median', 'min', 'max')]
    groups = {}
    for r in rows:
        groups.setdefault((r['metric'], r['n'], r['param']), {}).setdefault(r['daemon'], []).append(r)
    keyed = any(KEYED in g for g in groups.values())

    def order(key):
        m, n, p = key
        idx = [x[0] for x in METRICS].index(m) if m in LABEL else 999
        lead = re.match(r'[0-9.]+', p)
        return (idx, int(n or 0), float(lead.group(0)) if lead else 0.0, p)

    table, summary = [], []
    for key in sorted(groups, key=order):
        m, n, p = key
        label, unit, target = LABEL.get(m, (m, m, '', ''))[1:4]
        cells, meds = [], {}
        for d in DAEMONS:
            rs = groups[key].get(d, [])
            txt, med = cell(rs, unit)
            cells.append(txt or '-')
            meds[d] = med
            good = good_values(rs)
            if good:
                for tag, val in (('median', med), ('min', min(good)), ('max', max(good))):
                    summary.append({'metric': m, 'n': n, 'param': p, 'daemon': d, 'rep': tag,
                                    'value': '%.6g' % val, 'ok': '1', 'unit': unit,
                                    'note': '%d/%d ok' % (len(good), len(rs))})
        a, b = meds['ctsyncd'], meds['conntrackd']
        ratio = '-'
        if a is not None and b not in (None, 0):
            ratio = '%.2f' % (a / b)
        what = '%s, %s' % (label, unit)
        line = (what, size_of(n, p), cells[0], cells[1], ratio, target)
        if keyed:
            k = meds[KEYED]
            kratio = '-'
            if k is not None and a not in (None, 0):
                kratio = '%.2f' % (k / a)
            line += (cells[2], kratio)
        table.append(line)
    # rewrite the file: the measurements, then this summary (so that a
    # second report does not add a second summary)
    tmp = args.csv + '.tmp'
    with open(tmp, 'w', newline='') as f:
        w = csv.DictWriter(f, FIELDS)
        w.writeheader()
        for r in rows + summary:
            w.writerow({k: r.get(k, '') for k in FIELDS})
    os.replace(tmp, args.csv)

    head = ('metric', 'N', 'ctsyncd', 'conntrackd 1.4.7', 'ratio', 'target')
    if keyed:
        head += ('ctsyncd keyed', 'keyed/ctsyncd')
    text = render(head, table, args.markdown)
    if keyed:
        kt = keyed_table(groups)
        if kt:
            text += ('\nctsyncd keyed (Key in Sync: AES-256-GCM or XChaCha20-Poly1305 envelope, 38 bytes per '
                     'datagram) against ctsyncd unkeyed, same trials:\n\n')
            text += render(('metric', 'N', 'ctsyncd', 'ctsyncd keyed', 'change',
                            'per repetition', 'target', 'verdict'), kt, args.markdown)
    sys.stdout.write(text)
    if args.plots:
        plots(args, groups)
    return 0


def plots(args, groups):
    """benchmarks-cpu.png and benchmarks-commit.png with gnuplot (if present)."""
    gp = shutil.which('gnuplot')
    if not gp:
        print('report: gnuplot is missing, no figures', file=sys.stderr)
        return
    out = args.plots

    def med(m, n, d, p=''):
        rs = groups.get((m, n, p), {}).get(d, [])
        good = [float(r['value']) for r in rs if r['ok'] == '1' and r['value'] not in ('', 'nan')]
        return statistics.median(good) if good else float('nan')

    sizes = sorted({int(n) for (m, n, p) in groups if m == 'cpu_a'})
    if sizes:
        dat = os.path.join(out, 'cpu.dat')
        with open(dat, 'w') as f:
            f.write('# N ctsyncd_A ctsyncd_B conntrackd_A conntrackd_B ctsyncd-keyed_A ctsyncd-keyed_B'
                    '  (CPU ms per 1000 states)\n')
            for n in sizes:
                f.write('%s %g %g %g %g %g %g\n' % (nfmt(n), med('cpu_a', str(n), 'ctsyncd'),
                                                   med('cpu_b', str(n), 'ctsyncd'),
                                                   med('cpu_a', str(n), 'conntrackd'),
                                                   med('cpu_b', str(n), 'conntrackd'),
                                                   med('cpu_a', str(n), KEYED),
                                                   med('cpu_b', str(n), KEYED)))
        keyed = any(KEYED in groups.get(('cpu_a', str(n), ''), {}) for n in sizes)
        script = """set terminal pngcairo size 900,520 font ',11'
set output '%s'
set title 'CPU time per 1000 replicated states (median of the repetitions)'
set ylabel 'CPU ms per 1000 states (task clock, user + kernel)'
set xlabel 'states created on A (N)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top left
set grid ytics
set yrange [0:*]
plot '%s' using 2:xtic(1) title 'ctsyncd, A (primary)' lc rgb '#1f77b4', \\
     '' using 3 title 'ctsyncd, B (backup)' lc rgb '#9ecae1', \\
     '' using 4 title 'conntrackd 1.4.7, A' lc rgb '#d62728', \\
     '' using 5 title 'conntrackd 1.4.7, B' lc rgb '#ff9896'%s
""" % (os.path.join(out, 'benchmarks-cpu.png'), dat,
       ", \\\n     '' using 6 title 'ctsyncd keyed, A' lc rgb '#2ca02c', \\\n"
       "     '' using 7 title 'ctsyncd keyed, B' lc rgb '#98df8a'" if keyed else '')
        run_gnuplot(gp, script, os.path.join(out, 'cpu.gp'))
    sizes = sorted({int(n) for (m, n, p) in groups if m == 'commit_rate'})
    if sizes:
        dat = os.path.join(out, 'commit.dat')
        with open(dat, 'w') as f:
            f.write('# N ctsyncd conntrackd raw  (states/s, thousands)\n')
            for n in sizes:
                raws = [med('raw_rate', str(n), d) for d in DAEMONS]
                raws = [x for x in raws if not math.isnan(x)]
                raw = statistics.median(raws) if raws else float('nan')
                f.write('%s %g %g %g\n' % (nfmt(n), med('commit_rate', str(n), 'ctsyncd') / 1e3,
                                          med('commit_rate', str(n), 'conntrackd') / 1e3,
                                          raw / 1e3))
        script = """set terminal pngcairo size 900,520 font ',11'
set output '%s'
set title 'Commit of N external states into the kernel (-c), against the raw create rate'
set ylabel 'thousand states per second'
set xlabel 'states in the external cache (N)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set key top right
set grid ytics
set yrange [0:*]
plot '%s' using 2:xtic(1) title 'ctsyncd -c' lc rgb '#1f77b4', \\
     '' using 3 title 'conntrackd 1.4.7 -c' lc rgb '#d62728', \\
     '' using 4 title 'ctload raw-rate (kernel limit)' lc rgb '#7f7f7f'
""" % (os.path.join(out, 'benchmarks-commit.png'), dat)
        run_gnuplot(gp, script, os.path.join(out, 'commit.gp'))


def run_gnuplot(gp, script, path):
    with open(path, 'w') as f:
        f.write(script)
    r = subprocess.run([gp, path], stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        print('report: gnuplot failed on %s: %s' % (path, r.stderr.strip()), file=sys.stderr)


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='sub', required=True)

    def common(p):
        p.add_argument('--daemon', choices=('ctsyncd', 'conntrackd'), required=True)
        p.add_argument('--client', required=True, help="the daemon's client binary")
        p.add_argument('--conf', required=True, help="the backup's config file")
        p.add_argument('--ctload', default='ctload')
        p.add_argument('--interval', type=float, default=0.0,
                       help='seconds between samples (default: 5 %% of the time waited, 20 ms to 1 s)')

    m = sub.add_parser('measure', help='run a command and poll a count until a target')
    common(m)
    m.add_argument('--what', choices=('active', 'updated', 'kernel'), default='active')
    m.add_argument('--target', type=int, required=True)
    m.add_argument('--down', action='store_true', help='wait for the value to fall to the target')
    m.add_argument('--timeout', type=float, required=True)
    m.add_argument('--marks', default='', help='times (s) at which to record the fraction reached')
    m.add_argument('--stall', type=float, default=0,
                   help='give up when the value has not changed for this many seconds '
                        '(after the command has returned)')
    m.add_argument('--wait-cmd', action='store_true',
                   help='the target counts only once the command has returned')
    m.add_argument('cmd', nargs='*')
    m.set_defaults(fn=cmd_measure)

    lg = sub.add_parser('lag', help='replication lag under a paced load')
    common(lg)
    lg.add_argument('--target', type=int, required=True)
    lg.add_argument('--drain', type=float, default=20, help='seconds to wait after the load ends')
    lg.add_argument('--hard-timeout', type=float, default=120)
    lg.add_argument('--curves', help='write the sampled curves here')
    lg.add_argument('cmd', nargs='+')
    lg.set_defaults(fn=cmd_lag)

    rp = sub.add_parser('report', help='summary rows, table, figures')
    rp.add_argument('--csv', required=True)
    rp.add_argument('--plots', help='directory for the PNG figures')
    rp.add_argument('--markdown', action='store_true')
    rp.set_defaults(fn=cmd_report)

    args = ap.parse_args()
    return args.fn(args)


if __name__ == '__main__':
    sys.exit(main())
