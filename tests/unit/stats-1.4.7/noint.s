internal bypass:
connections new:		           1
connections updated:		           0
connections destroyed:		           0

cache external:
current active connections:	           0
connections created:		           0	failed:	           0
connections updated:		           0	failed:	           0
connections destroyed:		           0	failed:	           0

traffic processed:
                   0 Bytes                         0 Pckts

UDP traffic (active device=syncA):
                 108 Bytes sent                   32 Bytes recv
                   4 Pckts sent                    4 Pckts recv
                   0 Error send                    0 Error recv

message tracking:
                   0 Malformed msgs                    0 Lost msgs

