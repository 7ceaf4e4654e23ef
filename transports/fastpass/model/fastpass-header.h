/*
 * disaggsim: what a Fastpass packet carries besides the fabric frame header.
 */
#ifndef DISAGGSIM_FASTPASS_HEADER_H
#define DISAGGSIM_FASTPASS_HEADER_H

#include "ns3/header.h"

#include <cstdint>
#include <vector>

namespace ns3
{

/// FabricHeader::protocol of Fastpass frames (IEEE 802 "local experimental" EtherType 0x88B6).
constexpr uint16_t kFastpassProtocol = 0x88B6;

/**
 * Serialized bytes of a FastpassHeader without entries.  With the 18 B fabric frame header a
 * Fastpass packet carries 40 B of headers, the per-packet header of the authors' simulator
 * (NetSys/simulator run/params.cpp hdr_size = 40; its FastpassRTS and FastpassSchedulePkt
 * are hdr_size packets too, coresim/packet.cpp), so a full data packet is 1500 B on the wire.
 */
constexpr uint32_t kFastpassHeaderBytes = 22;
/// Serialized bytes of one allocation entry (flow id 8, timeslot offset 1, spine 2).
constexpr uint32_t kFastpassAllocEntryBytes = 11;
/// Serialized bytes of one missing-packet index of a MISSING reply.
constexpr uint32_t kFastpassMissingEntryBytes = 4;
/// Most packet indices one MISSING reply lists (the sender probes again for the rest).
constexpr uint32_t kFastpassMaxMissingPerReply = 64;
/// Serialized bytes of one destination of an endpoint REQUEST (FCP): destination 2,
/// cumulative timeslots wanted 4, timeslots received 4, shortest flow's unallocated
/// timeslots 4.  The A-REQ of the authors' Fastpass (yonch/fastpass src/protocol/fpproto.h)
/// carries 2 + 2 B (16-bit destination and count); ours keeps 32-bit counts, the received
/// count of the lost-ALLOC check and the size hint of the min-FCT order (doc §3).
constexpr uint32_t kFastpassAreqEntryBytes = 14;
/// Most destinations one endpoint REQUEST lists: FASTPASS_PKT_MAX_AREQ = 10 of the authors'
/// Fastpass endpoint (yonch/fastpass src/protocol/fpproto.h); further ones wait for the
/// next frame.
constexpr uint32_t kFastpassMaxAreqPerFrame = 10;
/// Serialized bytes of one timeslot of an endpoint ALLOC (FCP): destination 2, timeslot
/// offset 1, spine 1 (yonch/fastpass fpproto.h: its ALLOC names up to 15 destinations, 2 B
/// each, and 1 B per timeslot).
constexpr uint32_t kFastpassDstAllocEntryBytes = 4;

/// One timeslot allocated to a sender: its flow (per-flow requests) or destination (FCP, in
/// the low 16 bits), the offset of the timeslot in the batch and the spine its packet must
/// take (transports/fastpass/doc/fastpass.md §3, §4).
struct FastpassAllocEntry
{
    uint64_t flowId{0};
    uint8_t slotOffset{0};
    uint16_t spine{0};
};

/// One destination of an endpoint REQUEST (FCP, doc §3): the host wants `total` timeslots
/// to `dst` in all since it started and has received `received` of the ones granted; its
/// shortest flow to `dst` still needs `shortest` timeslots beyond the allocated ones.
struct FastpassAreqEntry
{
    uint16_t dst{0};
    uint32_t total{0};
    uint32_t received{0};
    uint32_t shortest{0};
};

/**
 * \brief The Fastpass header (transports/fastpass/doc/fastpass.md §5).
 *
 * - REQUEST (endpoint -> arbiter): flow flowId from host value0 >> 16 to host value0 & 0xFFFF
 *   wants value1 timeslots in total since its start (cumulative; the authors' simulator's
 *   FastpassRTS carries the absolute remaining count instead, NetSys/simulator
 *   coresim/packet.cpp; 0 withdraws the flow); `slot` = the ALLOC entries the sender has
 *   received for the flow (the arbiter re-grants the ones lost, FastpassArbiter).
 * - ALLOC (arbiter -> sender): the batch starting at timeslot `slot` gives the sender the
 *   timeslots of `allocs` (value1 = their number).
 * - DATA (sender -> receiver): packet value0 of flow flowId, sent in timeslot `slot`.
 * - DONE (receiver -> sender): flow flowId has every byte.
 * - PROBE (sender -> receiver): which packets of flowId are missing?
 * - MISSING (receiver -> sender): the packet indices of `missing` (value1 = their number).
 * - AREQ (endpoint -> arbiter, FCP): host value0 lists the destinations of `areqs` (value1 =
 *   their number, at most kFastpassMaxAreqPerFrame), each with its cumulative demand.
 * - DST_ALLOC (arbiter -> endpoint, FCP): as ALLOC, but each timeslot names the destination
 *   (the endpoint chooses the flow to it).
 * Fixed part, 22 bytes: type(1) flowId(8) value0(4) value1(4) slot(5, 40 bits); then
 * kFastpassAllocEntryBytes per alloc entry (kFastpassDstAllocEntryBytes in DST_ALLOC),
 * kFastpassMissingEntryBytes per missing index and kFastpassAreqEntryBytes per AREQ entry.
 */
class FastpassHeader : public Header
{
  public:
    enum Type : uint8_t
    {
        REQUEST = 1,
        ALLOC = 2,
        DATA = 3,
        DONE = 4,
        PROBE = 5,
        MISSING = 6,
        AREQ = 7,
        DST_ALLOC = 8,
    };

    static TypeId GetTypeId ();
    TypeId GetInstanceTypeId () const override;
    uint32_t GetSerializedSize () const override;
    void Serialize (Buffer::Iterator start) const override;
    uint32_t Deserialize (Buffer::Iterator start) override;
    void Print (std::ostream& os) const override;

    uint8_t type{0};
    uint64_t flowId{0};
    uint32_t value0{0};
    uint32_t value1{0};
    uint64_t slot{0};
    std::vector<FastpassAllocEntry> allocs;
    std::vector<uint32_t> missing;
    std::vector<FastpassAreqEntry> areqs;
};

} // namespace ns3

#endif // DISAGGSIM_FASTPASS_HEADER_H
