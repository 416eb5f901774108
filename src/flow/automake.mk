# src/flow: the flow record, its tables (internal and external caches) and
# the Filter.  arena.h and labels.h are private to this folder.
libctsyncd_a_SOURCES += src/flow/flow.c \
	src/flow/arena.c src/flow/arena.h \
	src/flow/labels.c src/flow/labels.h \
	src/flow/table.c \
	src/flow/exp_table.c \
	src/flow/keyset.c \
	src/flow/filter.c \
	src/flow/format.c
noinst_HEADERS += include/flow/flow.h include/flow/table.h include/flow/exp_table.h include/flow/filter.h include/flow/format.h include/flow/keyset.h

check_PROGRAMS += tests/unit/check_flow_table tests/unit/check_flow_filter
TESTS += tests/unit/check_flow_table tests/unit/check_flow_filter
tests_unit_check_flow_table_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_flow_table_LDADD = $(UNIT_LIBS)
# The allocation-failure tests make the n-th malloc/calloc/realloc fail.
tests_unit_check_flow_table_LDFLAGS = $(AM_LDFLAGS) \
	-Wl,--wrap=malloc -Wl,--wrap=calloc -Wl,--wrap=realloc
tests_unit_check_flow_filter_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_flow_filter_LDADD = $(UNIT_LIBS)

# Micro-benchmark of the table (ops/s, bytes per state).  Compiled by
# `make check` so that it follows the API, but never run by the suite:
# run bench/table-bench [states [user_bytes]] by hand.
check_PROGRAMS += bench/table-bench
bench_table_bench_SOURCES = bench/table-bench.c
bench_table_bench_LDADD = libctsyncd.a

check_PROGRAMS += tests/unit/check_flow_format
TESTS += tests/unit/check_flow_format
tests_unit_check_flow_format_CFLAGS = $(UNIT_CFLAGS)
tests_unit_check_flow_format_LDADD = $(UNIT_LIBS)
