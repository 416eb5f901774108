#!/usr/bin/env python3
"""Helper of scripts/ctsyncd-lab: one timed trial, and the figure.

  trial  start `ctload create N` in the primary's namespace, sample the
         backup's external cache (the curve) until it holds N or until the
         failure time, fail the primary (SIGKILL or SIGSTOP), commit the
         backup's external cache into its kernel and time that; print the
         measured CSV fields (see FIELDS) on one line.
  plot   draw OUT/lab.png from results.csv and the curves, with gnuplot.

The backup's count comes from its own client, through the function that
bench/compare-report.py uses, so ctsyncd and conntrackd 1.4.7 are counted
the same way.  See doc/lab.md.
"""

import argparse
import csv
import importlib.util
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location('compare_report', os.path.join(HERE, 'compare-report.py'))
compare_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_report)

# what `trial` prints, in this order (scripts/ctsyncd-lab writes the header)
FIELDS = ('converged', 'convergence_s', 'fail_s', 'primary_states', 'states_at_fail', 'reached_pct', 'states_lost',
          'recovery_s', 'states_surviving', 'surviving_pct', 'load_s')


def kernel_count(ctload, ns):
    out = compare_report.run_out(['ip', 'netns', 'exec', ns, ctload, 'count', '--stats', '--json'])
    try:
        return int(json.loads(out)['entries'])
    except (TypeError, ValueError, KeyError):
        return None


def backup_active(args):
    r = compare_report.external(args.daemon, args.client, args.conf_b)
    return None if r is None else r[0]


def interval(t):
    """Seconds between samples: 50 ms for the first 10 s (the shape of the
    curve there is what the figure shows), then 200 ms."""
    return 0.05 if t < 10 else 0.2


def cmd_trial(args):
    res = dict.fromkeys(FIELDS, '')
    curve = []
    load = subprocess.Popen(['ip', 'netns', 'exec', args.ns_a, args.ctload, 'create', str(args.n),
                             '--proto', 'tcp', '--timeout', '900', '--base-addr', '198.18.128.1']
                            + (['--rate', str(args.rate)] if args.rate else []),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    t0 = time.monotonic()
    fail_at = None if args.fail_at == 'converged' else float(args.fail_at)
    deadline = t0 + args.cap
    load_end = None
    last = 0
    while True:
        ts = time.monotonic()
        if load_end is None and load.poll() is not None:
            load_end = ts - t0
        v = backup_active(args)
        te = time.monotonic()
        t = (ts + te) / 2 - t0
        if v is not None:
            last = v
            curve.append((t, v))
            if v >= args.n and res['converged'] == '':
                res['converged'] = 1
                res['convergence_s'] = '%.3f' % t
        if fail_at is None and res['converged'] == 1:
            break
        if fail_at is not None and te - t0 >= fail_at:
            break
        if te >= deadline:
            break
        time.sleep(max(0.0, interval(te - t0) - (time.monotonic() - ts)))
    # the failure: nothing of A's runs from here on.  A failed firewall
    # makes no more states either, so a load still running stops with it
    # (ctload's requests are whole datagrams, each taken by the kernel
    # inside one sendmsg(): the table holds every state it acknowledged)
    try:
        os.kill(args.pid_a, signal.SIGKILL if args.fail == 'kill' else signal.SIGSTOP)
    except ProcessLookupError:
        print('lab: the primary (PID %d) was already gone at the failure' % args.pid_a, file=sys.stderr)
    t_fail = time.monotonic() - t0
    if load.poll() is None:
        load.kill()
    # B's last count before the failure is what it has; one more read after
    # it catches what was already in flight
    v = backup_active(args)
    if v is not None:
        last = max(last, v)
        curve.append((time.monotonic() - t0, v))
    if res['converged'] == '':
        res['converged'] = 1 if last >= args.n else 0
        if last >= args.n:
            res['convergence_s'] = '%.3f' % (time.monotonic() - t0)
    primary = kernel_count(args.ctload, args.ns_a)
    if primary is None:
        primary = args.n
        print('lab: cannot count the primary\'s table: N is taken instead', file=sys.stderr)
    res['fail_s'] = '%.3f' % t_fail
    res['primary_states'] = primary
    res['states_at_fail'] = last
    res['reached_pct'] = '%.2f' % (100.0 * last / primary if primary else 100.0)
    res['states_lost'] = max(0, primary - last)
    # the takeover: B commits its external cache, as the keepalived hook
    # does; timed from the failure until B's kernel holds every state B had
    tc0 = time.monotonic()
    commit = subprocess.Popen(['ip', 'netns', 'exec', args.ns_b, args.client, '-C', args.conf_b, '-c'],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    got = None
    while time.monotonic() - tc0 < args.recovery_timeout:
        got = kernel_count(args.ctload, args.ns_b)
        if got is not None and got >= last and commit.poll() is not None:
            res['recovery_s'] = '%.3f' % (time.monotonic() - t0 - t_fail)
            break
        time.sleep(0.02)
    if commit.poll() is None:
        commit.kill()
        commit.wait()
    if load.poll() is None:
        try:
            load.wait(timeout=max(1.0, args.cap))
        except subprocess.TimeoutExpired:
            load.kill()
            load.wait()
    if load_end is None:
        load_end = time.monotonic() - t0
    res['load_s'] = '%.3f' % load_end
    out = (load.stdout.read() or '').strip()
    if load.returncode not in (0, -signal.SIGKILL):
        print('lab: ctload create ended with status %s: %s' % (load.returncode, out), file=sys.stderr)

    got = kernel_count(args.ctload, args.ns_b)
    res['states_surviving'] = got if got is not None else ''
    res['surviving_pct'] = '%.2f' % (100.0 * (got or 0) / primary if primary else 100.0)
    if args.curve:
        with open(args.curve, 'w') as f:
            f.write('# seconds since the load started, states in the backup (%% of %d); failure at %.3f s\n'
                    % (args.n, t_fail))
            for t, c in curve:
                f.write('%.3f %.3f\n' % (t, 100.0 * c / args.n))
    print(','.join(str(res[k]) for k in FIELDS))
    return 0


# --------------------------------------------------------------------------
# the figure
# --------------------------------------------------------------------------

def cmd_plot(args):
    gp = shutil.which('gnuplot')
    if gp is None:
        print('lab: gnuplot is missing: no figure (install gnuplot-nox)', file=sys.stderr)
        return 1
    rows = list(csv.DictReader(open(args.csv)))
    if not rows:
        print('lab: %s has no rows: no figure' % args.csv, file=sys.stderr)
        return 1
    daemons = sorted({r['daemon'] for r in rows}, key=lambda d: (d != 'ctsyncd', d))
    losses = sorted({float(r['loss_pct']) for r in rows})
    # left: B's states over time, the first repetition of each daemon at
    # the highest loss; right: convergence time against loss, median of
    # the repetitions, a missing one drawn at the cap
    top = max(losses)
    curves = []
    for d in daemons:
        for r in rows:
            if r['daemon'] == d and float(r['loss_pct']) == top and os.path.exists(r['curve']):
                curves.append((d, r))
                break
    pts = os.path.join(args.dir, 'lab-convergence.dat')
    with open(pts, 'w') as f:
        for i, d in enumerate(daemons):
            f.write('# %s\n' % d)
            for p in losses:
                vals = [float(r['convergence_s']) if r['converged'] == '1' and r['convergence_s'] else math.inf
                        for r in rows if r['daemon'] == d and float(r['loss_pct']) == p]
                vals.sort()
                med = vals[len(vals) // 2] if vals else math.inf
                cap = float(rows[0]['cap_s'])
                f.write('%g %g %d\n' % (p, med if math.isfinite(med) else cap, 1 if math.isfinite(med) else 0))
            f.write('\n\n')
    png = os.path.join(args.dir, 'lab.png')
    first = rows[0]
    title = '%s over %s, %s impairment, N=%s%s' % (
        first['mode'], first['channel'], first['impair'], first['n'],
        (', %s/s' % first['rate']) if first['rate'] not in ('', '0') else '')
    # one colour per daemon in both panels
    colour = {d: i + 1 for i, d in enumerate(daemons)}
    plot_curves = ', '.join("'%s' using 1:2 with lines lw 2 lc %d title '%s'" % (r['curve'], colour[d], d)
                            for d, r in curves)
    missed = {d for d in daemons for r in rows if r['daemon'] == d and r['converged'] != '1'}
    plot_conv = ', '.join(
        "'%s' index %d using 1:($3 == 1 ? $2 : 1/0) with linespoints lw 2 pt 7 lc %d title '%s'"
        % (pts, i, colour[d], d) for i, d in enumerate(daemons))
    plot_conv += ''.join(
        ", '%s' index %d using 1:($3 == 0 ? $2 : 1/0) with points pt 6 ps 2 lc %d title '%s: not converged by the cap'"
        % (pts, i, colour[d], d) for i, d in enumerate(daemons) if d in missed)
    script = """
set terminal pngcairo size 1200,480 noenhanced font ',10'
set output '%s'
set multiplot layout 1,2 title '%s'
set title 'backup states during the load, %g %% loss (first repetition)'
set xlabel 'seconds since the load started (log scale)'
set ylabel 'states in the backup, %% of N'
set logscale x
set xrange [0.01:*]
set yrange [0:105]
set key bottom right
set grid
plot %s
unset logscale x
set title 'convergence time against loss (median of the repetitions)'
set xlabel 'loss on the sync link, %%'
set ylabel 'seconds until the backup holds N (log scale)'
set xrange [%g:%g]
set logscale y
set yrange [0.01:%g]
set key top left
plot %s
unset multiplot
""" % (png, title, top, plot_curves or "1/0 notitle", min(losses) - 5, max(losses) + 5,
       float(rows[0]['cap_s']) * 2, plot_conv)
    p = subprocess.run([gp], input=script, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        # pngcairo is in gnuplot-nox; the plain png terminal is the fallback
        script = script.replace("pngcairo size 1200,480 noenhanced font ',10'", 'png size 1200,480 noenhanced')
        p = subprocess.run([gp], input=script, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        print('lab: gnuplot failed: %s' % p.stderr.strip(), file=sys.stderr)
        return 1
    print(png)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    t = sub.add_parser('trial', help='one trial (scripts/ctsyncd-lab runs it)')
    t.add_argument('--daemon', choices=('ctsyncd', 'conntrackd'), required=True)
    t.add_argument('--client', required=True)
    t.add_argument('--conf-b', required=True)
    t.add_argument('--ns-a', required=True)
    t.add_argument('--ns-b', required=True)
    t.add_argument('--ctload', required=True)
    t.add_argument('--pid-a', type=int, required=True)
    t.add_argument('--n', type=int, required=True)
    t.add_argument('--rate', type=int, default=0)
    t.add_argument('--fail', choices=('kill', 'stop'), default='kill')
    t.add_argument('--fail-at', default='converged')
    t.add_argument('--cap', type=float, default=60)
    t.add_argument('--recovery-timeout', type=float, default=60)
    t.add_argument('--curve')
    p = sub.add_parser('plot', help='the figure')
    p.add_argument('--csv', required=True)
    p.add_argument('--dir', required=True)
    args = ap.parse_args()
    return cmd_trial(args) if args.cmd == 'trial' else cmd_plot(args)


if __name__ == '__main__':
    sys.exit(main())
