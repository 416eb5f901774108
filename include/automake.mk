noinst_HEADERS = \
	include/cli.h \
	include/client.h \
	include/config.h \
	include/control_proto.h \
	include/control_server.h \
	include/log.h \
	include/loop.h \
	include/report.h
