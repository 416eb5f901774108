# src/kernel: the only code that talks ctnetlink -- conversion between
# netlink attributes and flows (pure), the event socket, dumps, and the
# batched writer.  nl.h is private to this folder.
noinst_HEADERS += include/kernel/kernel.h include/kernel/bpf.h include/kernel/nfqueue.h src/kernel/nl.h \
	include/kernel/tap_rec.h src/kernel/tap.h
libctsyncd_a_SOURCES += \
	src/kernel/ct_attr.c \
	src/kernel/tap.c \
	src/kernel/exp_attr.c src/kernel/attr.h \
	src/kernel/bpf_filter.c \
	src/kernel/nl.c \
	src/kernel/events.c \
	src/kernel/dump.c \
	src/kernel/get.c \
	src/kernel/nfqueue.c \
	src/kernel/writer.c

# Golden ctnetlink messages built with libmnl: parse, build, round trip,
# rejections.  No kernel needed.
check_PROGRAMS += tests/unit/check_kernel_attr
TESTS += tests/unit/check_kernel_attr
tests_unit_check_kernel_attr_CFLAGS = $(UNIT_CFLAGS) $(LIBMNL_CFLAGS)
tests_unit_check_kernel_attr_LDADD = $(UNIT_LIBS)

# The module on the real loop against the real kernel, in a namespace of
# its own (root): kernel.sh runs kernel-driver.
check_PROGRAMS += tests/integration/kernel-driver
tests_integration_kernel_driver_CFLAGS = $(AM_CFLAGS) $(LIBMNL_CFLAGS)
tests_integration_kernel_driver_LDADD = $(CTSYNCD_LIBS)
TESTS += tests/integration/kernel.sh
EXTRA_DIST += tests/integration/kernel.sh

# Expectations: the table, the ctnetlink conversion, the text form and the
# sync engine sending them.  No kernel needed.
check_PROGRAMS += tests/unit/check_exp
TESTS += tests/unit/check_exp
tests_unit_check_exp_CFLAGS = $(UNIT_CFLAGS) $(LIBMNL_CFLAGS)
tests_unit_check_exp_LDADD = $(UNIT_LIBS)

# Filter From Kernelspace: the compiled program in a BPF interpreter against
# the user-space Filter, on thousands of events.  No kernel needed.
check_PROGRAMS += tests/unit/check_bpf_filter
TESTS += tests/unit/check_bpf_filter
tests_unit_check_bpf_filter_CFLAGS = $(UNIT_CFLAGS) $(LIBMNL_CFLAGS)
tests_unit_check_bpf_filter_LDADD = $(UNIT_LIBS)

# EventSource bpf: tap.bpf.c compiled for the BPF target and embedded in the
# binary by tap_obj.S, so that no file has to be found at run time.
EXTRA_DIST += src/kernel/tap.bpf.c src/kernel/tap_obj.S
if HAVE_BPF_TAP
libctsyncd_a_SOURCES += src/kernel/tap_obj.S
libctsyncd_a_CFLAGS += $(LIBBPF_CFLAGS)
CTSYNCD_LIBS += $(LIBBPF_LIBS)
libctsyncd_a_CCASFLAGS = -Wa,-I$(top_builddir)
src/kernel/libctsyncd_a-tap_obj.$(OBJEXT): src/kernel/tap.bpf.o
src/kernel/tap.bpf.o: $(top_srcdir)/src/kernel/tap.bpf.c $(top_srcdir)/include/kernel/tap_rec.h
	$(AM_V_GEN)$(MKDIR_P) src/kernel && \
	$(BPF_CLANG) -O2 -g -Wall -Werror -target bpf -I$(top_srcdir)/include $(BPF_MULTIARCH_CFLAGS) \
		-c $(top_srcdir)/src/kernel/tap.bpf.c -o $@
CLEANFILES += src/kernel/tap.bpf.o
endif
