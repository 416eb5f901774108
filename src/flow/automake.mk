# The flow record and its tables.
libctsyncd_a_SOURCES += src/flow/flow.c
