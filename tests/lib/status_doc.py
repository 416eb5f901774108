#!/usr/bin/env python3
"""Check ctsyncd's -s answers against doc/status-json.md.

    status_doc.py DOC ANSWER.json... ANSWER.prom...

Each .json file must hold one JSON object (and a newline) with
"schema_version": 1; each .prom file the metrics of one answer: no series
twice, none untyped.  Then, both ways:
  - every key path seen (a.b, links[].index) is documented, with the
    documented JSON type, and every documented path is seen unless its
    "When" column names a condition;
  - the same for metric names and for label names.
Exit status 1 with one line per disagreement.
"""
import json
import re
import sys

ROW = re.compile(r'^\|\s*`([^`]+)`\s*\|([^|]*)\|([^|]*)\|([^|]*)\|([^|]*)\|\s*$')
METRIC = re.compile(r'ctsyncd_[a-z0-9_]+')
LABEL = re.compile(r'\{([a-z_][a-z0-9_]*)\}')
SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL_PAIR = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_doc(path):
    """{path: (types, when)}, {metric: when}, {label: when}"""
    keys, metrics, labels = {}, {}, {}
    for n, line in enumerate(open(path, encoding='utf-8'), 1):
        m = ROW.match(line.rstrip('\n'))
        if not m:
            continue
        key, typ, when, metric = (g.strip() for g in m.groups()[:4])
        if key in keys:
            raise SystemExit('%s:%d: %s is documented twice' % (path, n, key))
        types = {t.strip() for t in typ.split(' or ')}
        bad = types - {'integer', 'number', 'boolean', 'string', 'null'}
        if bad:
            raise SystemExit('%s:%d: unknown type %s' % (path, n, ', '.join(sorted(bad))))
        keys[key] = (types, when)
        for name in METRIC.findall(metric):
            # A metric shared by rows (an _info series) is conditional only if every row is.
            if metrics.get(name, 'x') != 'always':
                metrics[name] = when
        for name in LABEL.findall(metric):
            if labels.get(name, 'x') != 'always':
                labels[name] = when
    return keys, metrics, labels


def json_type(v):
    if v is None:
        return 'null'
    if isinstance(v, bool):
        return 'boolean'
    if isinstance(v, int):
        return 'integer'
    if isinstance(v, float):
        return 'number'
    if isinstance(v, str):
        return 'string'
    return type(v).__name__


def leaves(v, prefix, out):
    if isinstance(v, dict):
        for k, x in v.items():
            leaves(x, prefix + '.' + k if prefix else k, out)
    elif isinstance(v, list):
        for x in v:
            leaves(x, prefix + '[]', out)
    else:
        out.setdefault(prefix, set()).add(json_type(v))


def main(argv):
    doc, files = argv[1], argv[2:]
    keys, metrics, labels = parse_doc(doc)
    errors = []
    seen_keys, seen_metrics, seen_labels = {}, {}, {}
    for f in files:
        text = open(f, encoding='utf-8').read()
        if f.endswith('.json'):
            try:
                d = json.loads(text)
            except ValueError as e:
                errors.append('%s: not JSON: %s' % (f, e))
                continue
            if not isinstance(d, dict) or not text.endswith('}\n') or text.count('\n') != 1:
                errors.append('%s: not one JSON object on one line' % f)
                continue
            if d.get('schema_version') != 1 or next(iter(d)) != 'schema_version':
                errors.append('%s: schema_version is not 1, first' % f)
            found = {}
            leaves(d, '', found)
            for k, t in found.items():
                seen_keys.setdefault(k, set()).update(t)
                seen_keys[k].add('@' + f)
        else:
            series, types = set(), {}
            for line in text.splitlines():
                if line.startswith('# TYPE '):
                    _, _, name, typ = line.split(' ', 3)
                    types[name] = typ
                    if typ == 'untyped':
                        errors.append('%s: %s is untyped' % (f, name))
                    continue
                if line.startswith('#'):
                    continue
                m = SERIES.match(line)
                if not m:
                    errors.append('%s: not a series: %r' % (f, line))
                    continue
                name, lbl = m.group(1), m.group(3) or ''
                if name not in types:
                    errors.append('%s: %s has no # TYPE' % (f, name))
                if (name, lbl) in series:
                    errors.append('%s: %s{%s} twice' % (f, name, lbl))
                series.add((name, lbl))
                seen_metrics.setdefault(name, f)
                for lname, _ in LABEL_PAIR.findall(lbl):
                    seen_labels.setdefault(lname, f)
    for k, t in sorted(seen_keys.items()):
        where = sorted(x[1:] for x in t if x.startswith('@'))[0]
        t = {x for x in t if not x.startswith('@')}
        if k not in keys:
            errors.append('key %s (%s, in %s) is not documented' % (k, '/'.join(sorted(t)), where))
            continue
        documented = keys[k][0]
        ok = {x for x in t if x in documented or (x == 'integer' and 'number' in documented)}
        if ok != t:
            errors.append('key %s is %s, documented as %s' % (k, ' or '.join(sorted(t)),
                                                               ' or '.join(sorted(documented))))
    for k, (_, when) in sorted(keys.items()):
        if k not in seen_keys and when == 'always':
            errors.append('key %s is documented (always) but was never seen' % k)
    for what, documented, seen in (('metric', metrics, seen_metrics), ('label', labels, seen_labels)):
        for name, f in sorted(seen.items()):
            if name not in documented:
                errors.append('%s %s (in %s) is not documented' % (what, name, f))
        for name, when in sorted(documented.items()):
            if name not in seen and when == 'always':
                errors.append('%s %s is documented (always) but was never seen' % (what, name))
    unseen = sorted(k for k in keys if k not in seen_keys)
    print('%d keys, %d metrics and %d labels seen in %d answers; documented but not seen here: %s'
          % (len(seen_keys), len(seen_metrics), len(seen_labels), len(files),
             ', '.join(unseen) if unseen else 'none'))
    for e in errors:
        print('status_doc: ' + e)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
