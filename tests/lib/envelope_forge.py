#!/usr/bin/env python3
"""What an attacker on the sync segment does to keyed ctsyncd datagrams.

The envelope (doc/envelope.md §1): a 22-byte header (0xC5, version << 4 |
type, u16 length, u16 key id, u64 session id, u64 counter, big-endian),
the datagram encrypted with XChaCha20-Poly1305-IETF (additional data: the
header; nonce: sid || counter || 8 zero bytes) and a 16-byte tag.  Datagrams
travel between the subcommands as lines of hex, one datagram a line.

  sniff IFACE SRC_MAC SRC_IP PORT SECONDS MAX [data]
        record the UDP payloads SRC_IP (at SRC_MAC) sends to PORT, as an
        AF_PACKET socket on IFACE sees them: at most MAX of them, for at
        most SECONDS; with "data", only DATA envelopes (no handshake)
  send SRC DST PORT              send the lines of stdin from SRC (IP_TRANSPARENT:
                                 SRC need not be ours) to DST:PORT
  mutate KIND                    each line of stdin, changed as KIND says (below)
  plain-ct-new SADDR DADDR SPORT DPORT
                                 a 1.4.7 CT_NEW message flagged HELLO: a TCP
                                 flow ESTABLISHED, SEEN_REPLY|ASSURED, 600 s
  seal KEYFILE|random [KEYID]    the first line of stdin, resealed with another
                                 key (a new random one, or a file's), and with
                                 the key id KEYID (4 hex digits) if given, with
                                 a counter 65537 ahead of the original's
  garbage N SEED                 N datagrams that start with the magic byte but
                                 are no envelope: short ones and other versions
  keyid KEYFILE                  the key id of a key file (4 hex digits)
  sid                            the session id of the first line of stdin
  type                           the type of each line of stdin (1 DATA, 2 CHALLENGE, 3 RESPONSE, 4 DATA_GCM)
"""
import base64
import random
import socket
import struct
import sys
import time

MAGIC = 0xC5
HDR = 22
TAG = 16
KEY_ID_MESSAGE = b"ctsyncd envelope key id v1"
IP_TRANSPARENT = 19
PACKET_OUTGOING = 4


def lines():
    return [bytes.fromhex(l) for l in sys.stdin.read().split()]


def emit(datagrams):
    for d in datagrams:
        print(d.hex())


def key_of_file(path):
    with open(path) as f:
        key = base64.b64decode(f.read().strip(), validate=True)
    assert len(key) == 32, path
    return key


def key_id(key):
    from nacl.bindings import crypto_generichash_blake2b_salt_personal
    digest = crypto_generichash_blake2b_salt_personal(KEY_ID_MESSAGE, digest_size=16, key=key)
    return struct.unpack(">H", digest[:2])[0]


def seal(key, kid, vertype, sid, counter, payload):
    from nacl.bindings import crypto_aead_xchacha20poly1305_ietf_encrypt
    hdr = struct.pack(">BBHHQQ", MAGIC, vertype, HDR + len(payload) + TAG, kid, sid, counter)
    nonce = hdr[6:22] + bytes(8)
    return hdr + crypto_aead_xchacha20poly1305_ietf_encrypt(payload, hdr, nonce, key)


def cmd_sniff(iface, src_mac, src_ip, port, seconds, count, only=""):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((iface, 0))
    s.settimeout(0.2)
    mac = bytes.fromhex(src_mac.replace(":", ""))
    got, end = 0, time.time() + float(seconds)
    while got < int(count) and time.time() < end:
        try:
            frame, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        ip = frame[14:]
        if addr[2] == PACKET_OUTGOING or frame[6:12] != mac or ip[9] != 17:
            continue
        ihl = (ip[0] & 15) * 4
        if socket.inet_ntoa(ip[12:16]) != src_ip or struct.unpack(">H", ip[ihl + 2:ihl + 4])[0] != int(port):
            continue
        payload = ip[ihl + 8:struct.unpack(">H", ip[2:4])[0]]
        if only == "data" and (len(payload) < 2 or payload[0] != MAGIC or payload[1] != 0x11):
            continue
        print(payload.hex(), flush=True)
        got += 1


def cmd_send(src, dst, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_IP, IP_TRANSPARENT, 1)
    s.bind((src, 0))
    for d in lines():
        s.sendto(d, (dst, int(port)))
        time.sleep(0.002)


def flip(d, byte, bit):
    d = bytearray(d)
    d[byte] ^= 1 << bit
    return bytes(d)


def mutate(d, kind):
    length = struct.unpack(">H", d[2:4])[0]
    if kind == "flip-sid":              # authenticated as additional data: bad_tag
        return flip(d, 9, 3)
    if kind == "flip-counter":          # 2^16 ahead: a counter A has not used yet
        return flip(d, 19, 0)
    if kind == "flip-body":             # the ciphertext
        return flip(d, HDR + 1, 5)
    if kind == "flip-tag":
        return flip(d, len(d) - 1, 7)
    if kind == "flip-keyid":            # no key of that id: unknown_key_id
        return flip(d, 5, 0)
    if kind == "flip-version":          # version 3: malformed
        return flip(d, 1, 5)
    if kind == "flip-type":             # type 0: malformed
        return flip(d, 1, 0)
    if kind == "flip-len-down":         # shorter than the datagram: malformed
        low = length & -length
        return d[:2] + struct.pack(">H", length ^ low) + d[4:]
    if kind == "flip-len-up":           # longer than the datagram: truncated
        return flip(d, 2, 7)
    if kind == "cut-header":            # shorter than the overhead: truncated
        return d[:HDR - 1]
    if kind == "cut-one":               # one byte short of its length: truncated
        return d[:-1]
    if kind == "magic-only":
        return d[:1]
    raise SystemExit("unknown mutation " + kind)


def cmd_mutate(kind):
    emit(mutate(d, kind) for d in lines())


def tlv(attr, payload):
    pad = (-len(payload)) % 4
    return struct.pack(">HH", 4 + len(payload), attr) + payload + bytes(pad)


def cmd_plain_ct_new(saddr, daddr, sport, dport):
    body = (tlv(0, socket.inet_aton(saddr) + socket.inet_aton(daddr)) +   # NTA_IPV4
            tlv(5, struct.pack(">I", 0x0e)) +                            # STATUS: SEEN_REPLY|ASSURED|CONFIRMED
            tlv(2, b"\x06") +                                            # L4PROTO: TCP
            tlv(3, struct.pack(">HH", int(sport), int(dport))) +         # PORT
            tlv(4, b"\x03") +                                            # TCP_STATE: ESTABLISHED
            tlv(6, struct.pack(">I", 600)))                              # TIMEOUT
    seq = random.getrandbits(32)
    # version 1, type CT_NEW; flags HELLO: "I restarted", taken whatever the sequence number
    emit([struct.pack(">BBHI", 0x10, 0x20, 8 + len(body), seq) + body])


def cmd_seal(keyfile, kid=None):
    from nacl.utils import random as nacl_random
    d = lines()[0]
    if keyfile == "random":     # a key whose id is not the original's
        key = nacl_random(32)
        while key_id(key) == struct.unpack(">H", d[4:6])[0]:
            key = nacl_random(32)
    else:
        key = key_of_file(keyfile)
    ident = int(kid, 16) if kid else key_id(key)
    sid, counter = struct.unpack(">QQ", d[6:22])
    # a counter A has not used yet, so that only the tag stands in the way;
    # the payload does not matter, only its length, to look like the original
    emit([seal(key, ident, d[1], sid, counter + 65537, bytes(len(d) - HDR - TAG))])


def cmd_garbage(n, seed):
    rnd = random.Random(int(seed))
    out = []
    for i in range(int(n)):
        if i % 2:       # shorter than the overhead: truncated
            out.append(bytes([MAGIC]) + bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 37))))
        else:           # long enough, but not of version 1: malformed
            size = rnd.randrange(38, 200)
            body = bytearray(rnd.getrandbits(8) for _ in range(size - 1))
            body[0] = rnd.choice([0, 2, 3, 15]) << 4 | rnd.randrange(16)
            out.append(bytes([MAGIC]) + bytes(body))
    emit(out)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "sniff":
        cmd_sniff(*args)
    elif cmd == "send":
        cmd_send(*args)
    elif cmd == "mutate":
        cmd_mutate(*args)
    elif cmd == "plain-ct-new":
        cmd_plain_ct_new(*args)
    elif cmd == "seal":
        cmd_seal(*args)
    elif cmd == "garbage":
        cmd_garbage(*args)
    elif cmd == "keyid":
        print("%04x" % key_id(key_of_file(args[0])))
    elif cmd == "sid":
        print(lines()[0][6:14].hex())
    elif cmd == "type":
        emit_types = [str(d[1] & 15) for d in lines()]
        print("\n".join(emit_types))
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
