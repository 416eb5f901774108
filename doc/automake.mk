dist_man_MANS += doc/ctsyncd.conf.5
dist_man_MANS += doc/ctsyncd.8
EXTRA_DIST += doc/protocol.md
EXTRA_DIST += doc/architecture.md
EXTRA_DIST += doc/envelope.md
EXTRA_DIST += doc/status-json.md
EXTRA_DIST += doc/benchmarks.md doc/benchmarks-commit.png doc/benchmarks-cpu.png
EXTRA_DIST += doc/packaging.md
