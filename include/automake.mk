noinst_HEADERS = \
	include/cli.h \
	include/client.h \
	include/config.h \
	include/control_proto.h \
	include/control_server.h \
	include/report.h
