cache stats:
current active connections:	           1
connections created:		           2	failed:	           0
connections updated:		           0	failed:	           0
connections destroyed:		           1	failed:	           0

traffic processed:
                   0 Bytes                         0 Pckts

