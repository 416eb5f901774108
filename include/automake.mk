# Module contracts live in include/<module>/; each module's automake.mk
# lists its own.
noinst_HEADERS =
