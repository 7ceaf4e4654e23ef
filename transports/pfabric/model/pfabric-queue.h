/*
 * disaggsim: pFabric switch port: priority scheduling and priority dropping.
 */
#ifndef DISAGGSIM_PFABRIC_QUEUE_H
#define DISAGGSIM_PFABRIC_QUEUE_H

#include "topologies/model/fabric-queue.h"

#include <vector>

namespace ns3
{

/**
 * Bits of FabricHeader::flowHash that pFabric uses to spray a flow's packets over the ECMP
 * paths; the bits above them are the flow id (see PfabricFlowHash).
 */
constexpr uint32_t kPfabricSprayBits = 8;

/**
 * \returns the FabricHeader::flowHash of packet \p packetIndex of flow \p flowId: the flow id
 * (mod 2^24) in the high bits (the queue's flow identity, PfabricFlowKey) and, with \p spray, the
 * packet index in the low kPfabricSprayBits bits so that consecutive packets take consecutive ECMP
 * paths (YAPS `load_balancing: 0`, per-packet round robin; doc/pfabric.md §4).
 */
inline uint32_t
PfabricFlowHash (uint64_t flowId, uint32_t packetIndex, bool spray)
{
    uint32_t low = spray ? (packetIndex & ((1u << kPfabricSprayBits) - 1)) : 0;
    return (static_cast<uint32_t> (flowId) << kPfabricSprayBits) | low;
}

/// \returns the flow identity the queue compares: the low 24 bits of the flow id (two flows
/// from one host whose ids differ by a multiple of 2^24 would share the starvation-prevention
/// order at a port they both cross at once; harmless and, with SIM_FLOWS ids, rare).
inline uint32_t
PfabricFlowKey (uint32_t flowHash)
{
    return flowHash >> kPfabricSprayBits;
}

/**
 * \brief A pFabric port (Alizadeh et al., SIGCOMM'13 §4.2; doc/pfabric.md §2).
 *
 * Priority = FabricHeader::rank, lower is more urgent (remaining flow bytes; ACKs 0).
 * - Dequeue: find the buffered frame with the lowest rank (the earliest one on ties), then
 *   send the earliest buffered frame of that frame's flow (starvation prevention, §4.2).
 *   Only frames that may start now compete (FabricQueueItem::notBefore <= now: a cut-through
 *   port holds frames whose tail is still arriving from a slower link); if none may, the
 *   first to become ready goes.  Committing the port to a frame that cannot start yet while
 *   another could would idle it: on the 4x-faster ToR uplinks that halved their capacity
 *   under load and doubled the large-flow slowdown (doc/pfabric.md §8).
 * - Enqueue into a full buffer: if the arriving frame's rank is >= the highest buffered rank
 *   it is dropped; otherwise the buffered frame with the highest rank (the latest one on
 *   ties) is evicted, repeatedly until the arriving frame fits (§4.2 "priority dropping";
 *   YAPS ext/pfabricqueue.cpp).
 * Frames are kept in arrival order in a vector and found by linear scans: a 36 KB buffer
 * holds at most 24 full frames, where a scan beats any heap; no allocation per frame once
 * the vector has grown.  The vector holds trivially copyable slots (the packet as a raw
 * pointer that owns one reference), so removing a frame from the middle is one memmove
 * instead of a Ptr move per later frame, and the scans pick their minimum without branches.
 *
 * The capacity is the base class's MaxBytes (set by the topology: 36 KB per switch port, the
 * transport's HostBufferBytes at host NICs).  Priority dropping is the base class's eviction
 * hook (FabricQueue::DoSelectVictim), so every pFabric drop, arriving or evicted, is reported
 * by the base Drop trace and GetDroppedPackets(), and no eviction passes through Dequeue.
 */
class PfabricQueue : public FabricQueue
{
  public:
    static TypeId GetTypeId ();
    PfabricQueue ();
    ~PfabricQueue () override;

    /// \returns true if a frame of flow \p flowKey (PfabricFlowKey) from host \p srcHost is
    /// buffered here (linear scan; used by the sender's timer at its own NIC).
    bool HoldsFlow (uint32_t flowKey, uint16_t srcHost) const;

  protected:
    void DoDispose () override;
    bool DoEnqueue (FabricQueueItem&& item) override;
    FabricQueueItem DoDequeue (Time now) override;
    /// Priority dropping: evict the highest-rank frame (the latest on ties) if the arriving
    /// frame's rank is lower, else refuse (the arriving frame is dropped).
    bool DoSelectVictim (const FabricQueueItem& arriving, FabricQueueItem& victim) override;
    bool DoRefusesArrival (const FabricHeader& arriving) const override;

  private:
    static constexpr std::size_t kNone = static_cast<std::size_t> (-1);

    /// \returns the index of the frame to drop first: the highest rank, the latest on ties.
    std::size_t WorstIndex () const;

    /// A buffered frame: FabricQueueItem with the packet as a raw pointer holding one
    /// reference (taken in DoEnqueue, handed back in TakeItem or dropped in Clear).
    struct Slot
    {
        Packet* packet;
        FabricHeader header;
        int64_t notBeforeStep;
    };

    /// Move slot \p index out as a FabricQueueItem (the reference goes with it) and close the
    /// gap, keeping arrival order.
    FabricQueueItem TakeItem (std::size_t index);
    /// Release every buffered packet.
    void Clear ();

    std::vector<Slot> m_items;
    /// The ingress port of each slot (FabricQueueItem::ingressPort), kept only while a
    /// switch's shared buffer is attached (the lossless fabric charges each frame to its
    /// ingress, topologies/doc/lossless.md); the lossy fabric's slots stay 56 B.
    std::vector<uint32_t> m_ingress;
    /// WorstIndex's answer while no frame has left since it was computed (an arrival updates
    /// it): a full port refusing arrival after arrival scans once (kNone: not known).
    mutable std::size_t m_worst{kNone};
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_QUEUE_H
