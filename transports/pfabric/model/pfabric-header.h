/*
 * disaggsim: what a pFabric packet carries besides the fabric frame header.
 */
#ifndef DISAGGSIM_PFABRIC_HEADER_H
#define DISAGGSIM_PFABRIC_HEADER_H

#include <cstdint>

namespace ns3
{

/// EtherType-like number of pFabric frames in FabricHeader::protocol (IEEE 802 "local
/// experimental" EtherType 0x88B5).
constexpr uint16_t kPfabricProtocol = 0x88B5;

/**
 * Bytes of the pFabric transport header.  Together with the 18 B fabric frame header
 * (kFabricHeaderBytes) a pFabric packet carries 40 B of headers, the per-packet header of the
 * reference simulator (YAPS, NetSys/simulator run/params.cpp: hdr_size = 40), so a full data
 * packet is 1460 + 40 = 1500 B on the wire and an ACK 40 B.
 */
constexpr uint32_t kPfabricHeaderBytes = 22;

/**
 * \brief Flags of a pFabric frame, in FabricHeader::transportFlags
 * (transports/pfabric/doc/pfabric.md §1, §3).
 *
 * The pFabric header travels out of band in the frame's FabricHeader, like the frame header
 * itself: the Packet holds its 22 bytes (zero-filled, so sizes and serialization times are
 * those of the real header).  The priority, remaining flow bytes (pFabric §4.1), is the
 * frame's rank, read by switch ports; the rest are FabricHeader's transport fields:
 * - flowId: the flow (SIM_FLOWS flow_id);
 * - seq: DATA/PROBE: byte offset of the payload in the flow; ACK: the cumulative ACK (next
 *   byte expected);
 * - sackSeq: ACK only: offset of the data packet this ACK answers (one ACK per data packet,
 *   so the sender rebuilds the SACK scoreboard of YAPS's Flow::receive_data_pkt packet by
 *   packet);
 * - transportFlags: PFABRIC_DATA, PFABRIC_ACK or PFABRIC_PROBE (an ACK of a probe carries
 *   both ACK and PROBE).
 * On a wire these would be 22 bytes: flowId(8) seq(4) sackSeq(4) flags(1) reserved(5).
 * Serializing them into the Packet and back cost 9 % of a heavy incast's run time
 * (bench/RESULTS.md, "What moved the numbers").
 */
enum PfabricFlags : uint8_t
{
    PFABRIC_DATA = 1,
    PFABRIC_ACK = 2,
    PFABRIC_PROBE = 4,
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_HEADER_H
