/*
 * disaggsim: what a lean TCP segment carries besides the fabric frame header.
 */
#ifndef DISAGGSIM_TCP_LEAN_HEADER_H
#define DISAGGSIM_TCP_LEAN_HEADER_H

#include <cstdint>

namespace ns3
{

/// EtherType-like number of lean TCP frames in FabricHeader::protocol (IEEE 802 "local
/// experimental" EtherType 2, 0x88B6; pFabric uses the first, 0x88B5).
constexpr uint16_t kTcpLeanProtocol = 0x88B6;

/**
 * Bytes of the IPv4 (20 B) and TCP (20 B, no options) headers a segment of ns-3's TCP
 * carries (transports/tcp/doc/tcp.md: timestamps off), so a full data segment is
 * 1460 + 40 + 18 = 1518 B on the wire and a pure ACK 58 B, as with the `tcp-ns3` transport.
 */
constexpr uint32_t kTcpLeanHeaderBytes = 40;

/// \returns the TCP option bytes of an ACK that carries \p blocks SACK blocks: kind + length
/// + 8 B per block (RFC 2018 §3), at most 4 blocks in 40 B of options, padded to a multiple
/// of 4 bytes (RFC 9293 §3.1 data offset in 32-bit words).  0 for no block.
inline uint32_t
TcpLeanSackOptionBytes (uint32_t blocks)
{
    if (blocks == 0)
    {
        return 0;
    }
    const uint32_t bytes = 2 + 8 * (blocks < 4 ? blocks : 4);
    return (bytes + 3) / 4 * 4;
}

/**
 * \brief Flags of a lean TCP frame, in FabricHeader::transportFlags.
 *
 * The TCP header travels out of band in the frame's FabricHeader, as pFabric's does
 * (transports/pfabric/model/pfabric-header.h); the Packet holds its bytes zero-filled so
 * sizes and serialization times are those of the real headers.  Fields:
 * - flowId: the flow (SIM_FLOWS flow_id), standing for the connection's 4-tuple;
 * - seq: DATA: byte offset of the payload in the flow; ACK: the cumulative ACK (next byte
 *   expected, RFC 9293 §3.4);
 * - sackSeq: ACK with TCP_LEAN_SACK: offset of the out-of-order segment that triggered it,
 *   the first SACK block of RFC 2018 §4 ("the first SACK block MUST specify the contiguous
 *   block of data containing the segment which triggered this ACK"); segments never change
 *   boundaries, so the offset names the block;
 * - ecn (the frame's own field): ECT(0) on DCTCP data, CE once a switch port marked it;
 * - transportFlags: TCP_LEAN_DATA or TCP_LEAN_ACK, with TCP_LEAN_ECE (RFC 3168 §6.1; DCTCP's
 *   per-ACK echo, RFC 8257 §3.2) and TCP_LEAN_SACK.
 */
enum TcpLeanFlags : uint8_t
{
    TCP_LEAN_DATA = 1,
    TCP_LEAN_ACK = 2,
    TCP_LEAN_ECE = 4,
    TCP_LEAN_SACK = 8,
};

} // namespace ns3

#endif // DISAGGSIM_TCP_LEAN_HEADER_H
