cache internal:
current active connections:	           2
connections created:		           3	failed:	           2
connections updated:		           1	failed:	           0
connections destroyed:		           1	failed:	           0

cache external:
current active connections:	           0
connections created:		           0	failed:	           0
connections updated:		           0	failed:	           0
connections destroyed:		           0	failed:	           0

traffic processed:
                   0 Bytes                         0 Pckts

UDP traffic (active device=syncA):
                 444 Bytes sent                    0 Bytes recv
                   8 Pckts sent                    0 Pckts recv
                   0 Error send                    0 Error recv

message tracking:
                   0 Malformed msgs                    0 Lost msgs

