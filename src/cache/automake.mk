# src/cache: the internal and external caches as jobs, one file each
# (cache.h; cache_int.h is private to this folder).
libctsyncd_a_SOURCES += \
	src/cache/cache_int.h \
	src/cache/cache.c \
	src/cache/local.c \
	src/cache/local_exp.c \
	src/cache/bypass.c \
	src/cache/remote.c \
	src/cache/commit.c \
	src/cache/flush.c \
	src/cache/report.c \
	src/cache/stats_log.c src/cache/stats_log.h
noinst_HEADERS += include/cache/cache.h
