# src/loop: the epoll event loop and the log sink, below every adapter
# (kernel, link, control) and the daemon that wires them.
libctsyncd_a_SOURCES += \
	src/loop/loop.c \
	src/loop/log.c
noinst_HEADERS += include/loop/loop.h include/loop/log.h
