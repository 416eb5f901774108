cache internal:
current active connections:	           1
connections created:		           2	failed:	           0
connections updated:		           0	failed:	           0
connections destroyed:		           1	failed:	           0

cache external:
current active connections:	           1
connections created:		           1	failed:	           0
connections updated:		           0	failed:	           0
connections destroyed:		           0	failed:	           0

traffic processed:
                   0 Bytes                         0 Pckts

UDP traffic (active device=syncA):
                 292 Bytes sent                  140 Bytes recv
                   7 Pckts sent                    5 Pckts recv
                   0 Error send                    0 Error recv

message tracking:
                   0 Malformed msgs                    0 Lost msgs

