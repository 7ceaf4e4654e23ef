/*
 * disaggsim: what a pFabric packet carries besides the fabric frame header.
 */
#ifndef DISAGGSIM_PFABRIC_HEADER_H
#define DISAGGSIM_PFABRIC_HEADER_H

#include "ns3/header.h"

#include <cstdint>

namespace ns3
{

/// EtherType-like number of pFabric frames in FabricHeader::protocol (IEEE 802 "local
/// experimental" EtherType 0x88B5).
constexpr uint16_t kPfabricProtocol = 0x88B5;

/**
 * Serialized bytes of PfabricHeader.  Together with the 18 B fabric frame header
 * (kFabricHeaderBytes) a pFabric packet carries 40 B of headers, the per-packet header of the
 * reference simulator (YAPS, NetSys/simulator run/params.cpp: hdr_size = 40), so a full data
 * packet is 1460 + 40 = 1500 B on the wire and an ACK 40 B.
 */
constexpr uint32_t kPfabricHeaderBytes = 22;

/**
 * \brief The pFabric transport header (transports/pfabric/doc/pfabric.md §1, §3).
 *
 * The packet's priority (remaining flow bytes, pFabric §4.1) travels in FabricHeader::rank,
 * where switch ports read it without deserializing; this header carries what only the end
 * hosts read:
 * - flowId: the flow (SIM_FLOWS flow_id);
 * - seq: DATA/PROBE: byte offset of the payload in the flow; ACK: the cumulative ACK (next
 *   byte expected);
 * - sackSeq: ACK only: offset of the data packet this ACK answers (one ACK per data packet,
 *   so the sender rebuilds the SACK scoreboard of YAPS's Flow::receive_data_pkt packet by
 *   packet);
 * - flags: DATA, ACK or PROBE.
 * 22 bytes: flowId(8) seq(4) sackSeq(4) flags(1) reserved(5).
 */
class PfabricHeader : public Header
{
  public:
    enum Flags : uint8_t
    {
        DATA = 1,
        ACK = 2,
        PROBE = 4,
    };

    static TypeId GetTypeId ();
    TypeId GetInstanceTypeId () const override;
    uint32_t GetSerializedSize () const override;
    void Serialize (Buffer::Iterator start) const override;
    uint32_t Deserialize (Buffer::Iterator start) override;
    void Print (std::ostream& os) const override;

    uint64_t flowId{0};
    uint32_t seq{0};
    uint32_t sackSeq{0};
    uint8_t flags{0};
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_HEADER_H
