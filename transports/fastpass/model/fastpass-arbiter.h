/*
 * disaggsim: the Fastpass arbiter, a node on the fabric (Perry et al. SIGCOMM'14 §3, §4).
 */
#ifndef DISAGGSIM_FASTPASS_ARBITER_H
#define DISAGGSIM_FASTPASS_ARBITER_H

#include "fastpass-header.h"
#include "topologies/model/fabric-host.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/traced-callback.h"

#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ns3
{

/// Order in which the allocator visits demands when it fills a timeslot.
enum FastpassOrder
{
    /// Fewest remaining timeslots first: the min-FCT policy (Fastpass §3.1, "the allocator
    /// can ... minimize flow completion time by ordering by remaining size"), the order of
    /// the authors' simulator (NetSys/simulator ext/fastpasshost.cpp FastpassFlowComparator).
    FEWEST_REMAINING,
    /// Least recently allocated first (Fastpass §3.1: demands ordered by the last timeslot
    /// they were allocated, a round-robin that approximates max-min fairness); never
    /// allocated demands first, in arrival order.
    LEAST_RECENTLY_ALLOCATED,
};

/// Fabric shape and timing the arbiter allocates for (set by FastpassFlowTransport).
struct FastpassArbiterConfig
{
    uint32_t nHosts{0};
    uint32_t hostsPerRack{1};
    uint32_t nSpines{1};
    /// Packets a ToR-spine link carries per timeslot (ClosTopology::SpineRateFactor: the link
    /// is that many times faster than a host link).
    uint32_t uplinkSlotCapacity{1};
    Time timeslot;
    uint32_t batchSlots{8};
    Time processingLatency;
    /// Timeslots between a pass and the first timeslot it allocates.
    uint64_t leadSlots{0};
    /// A REQUEST arriving this long after the flow's last ALLOC left was sent after that
    /// ALLOC arrived: granted timeslots its sender has not received were lost.
    Time lossHorizon;
    FastpassOrder order{FastpassOrder::FEWEST_REMAINING};
    /// FCP (Fastpass §5; doc §3): endpoints send AREQ frames with one cumulative demand per
    /// destination and demand is kept per (sender, receiver) pair; ALLOCs name destinations
    /// (DST_ALLOC).  false: one REQUEST per flow, demand per flow, ALLOCs name flows.
    bool perDestination{true};
};

/// The demand key of the pair (src, dst) under FCP (FastpassArbiterConfig::perDestination).
inline uint64_t
FastpassPairKey (uint16_t src, uint16_t dst)
{
    return (static_cast<uint64_t> (src) << 16) | dst;
}

/// One packet the allocator placed in a timeslot.
struct FastpassGrant
{
    uint64_t flowId{0};
    uint16_t src{0};
    uint16_t dst{0};
    uint16_t spine{0}; ///< the spine of an inter-rack packet (kFabricAnyUplink if intra-rack)
};

/// What the allocator did with one timeslot (the SlotAllocated trace): the grants and every
/// (src, dst) pair that still had demand but got nothing (for the maximality check).
struct FastpassSlotRecord
{
    uint64_t slot{0};
    std::vector<FastpassGrant> grants;
    std::vector<std::pair<uint16_t, uint16_t>> unserved;
};

/**
 * \brief The Fastpass arbiter (transports/fastpass/doc/fastpass.md §3, §4).
 *
 * Endpoints send it their demands (doc §3): under FCP (perDestination, default) AREQ
 * frames, one cumulative count per destination, and demand is kept per (src, dst) pair
 * (FastpassPairKey), ranked in FewestRemaining order by the pair's shortest flow; otherwise
 * REQUEST frames, one flow each.  A count is the total timeslots wanted since the start
 * (cumulative, so a repeated or reordered request and ALLOCs still in flight never make the
 * arbiter grant a timeslot twice); the demand is that total minus the timeslots granted.
 * A REQUEST also says how many granted timeslots the sender has received: if it arrives more
 * than lossHorizon after the flow's last ALLOC left, the missing ones were lost with their
 * ALLOC and are granted again.  Every
 * batchSlots timeslots (a pass at time j * batchSlots * timeslot, only while demand is
 * pending) it allocates the batch of timeslots [j * batchSlots + leadSlots, + batchSlots):
 * the pipelined allocation of §3.2, one batch ahead of time, as the authors' simulator's
 * FastpassArbiter::schedule_epoch (epochs of FASTPASS_EPOCH_PKTS = 8 timeslots).  Each
 * timeslot is a maximal matching between senders and receivers built greedily in `order`
 * (§3.1): a demand is granted the timeslot if its sender and its receiver are both still
 * free (and, across racks, if its ToR's uplinks and the destination ToR's downlinks still
 * have capacity: never binding on a full-bisection fabric).  Path selection (§4): the
 * inter-rack packets of a timeslot form a bipartite multigraph between source and
 * destination ToRs of degree <= nSpines x uplinkSlotCapacity; it is edge-coloured with that
 * many colours (König's theorem, alternating-path recolouring) and colour c means spine
 * c mod nSpines, so no ToR-spine link carries more packets in a timeslot than it can
 * serialize in one.  processingLatency after the pass, each sender gets one ALLOC frame with
 * its timeslots of the batch (DST_ALLOC, naming destinations, under FCP).
 */
class FastpassArbiter : public FabricHost
{
  public:
    static TypeId GetTypeId ();
    FastpassArbiter ();
    ~FastpassArbiter () override;

    void SetConfig (const FastpassArbiterConfig& config);

    /// Signature of SlotAllocated.
    typedef void (*SlotAllocatedCallback) (const FastpassSlotRecord& record);

    /// \returns REQUEST (per flow) or AREQ (FCP) frames received.
    uint64_t GetRequests () const
    {
        return m_requests;
    }

    /// \returns demands (flows, or FCP destinations) those frames listed.
    uint64_t GetRequestEntries () const
    {
        return m_requestEntries;
    }

    uint64_t GetGrants () const
    {
        return m_grants;
    }

    uint64_t GetPasses () const
    {
        return m_passes;
    }

    uint64_t GetAllocFrames () const
    {
        return m_allocFrames;
    }

    /// \returns granted timeslots re-granted because their ALLOC was lost.
    uint64_t GetLostGrants () const
    {
        return m_lostGrants;
    }

    /// \returns the number of flows with demand pending.
    std::size_t GetNPendingFlows () const
    {
        return m_demands.size ();
    }

  protected:
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    struct Demand
    {
        uint16_t src{0};
        uint16_t dst{0};
        uint32_t remaining{0};
        uint64_t lastAllocated{0}; ///< 1 + last allocated timeslot, 0 = never
        /// FCP: timeslots the pair's shortest flow still needs (the FewestRemaining key;
        /// per flow it is `remaining`), decremented per grant down to 1.
        uint32_t shortest{0};
    };

    uint64_t OrderKey (const Demand& demand) const;
    void SetDemand (uint64_t flowId, uint16_t src, uint16_t dst, uint32_t remaining,
                    uint32_t shortest);
    /// REQUEST: the flow (or FCP pair) \p flowId wants \p total timeslots since its start
    /// (per flow, 0 = forget it) and its sender has received \p received of the timeslots
    /// granted so far.
    void OnRequest (uint64_t flowId, uint16_t src, uint16_t dst, uint32_t total, uint32_t received,
                    uint32_t shortest);
    void Erase (uint64_t flowId, const Demand& demand);
    void SchedulePass ();
    void Pass ();
    void AllocateSlot (uint64_t slot, std::vector<std::vector<FastpassAllocEntry>>& perSender,
                       uint64_t batchFirstSlot);
    void ColourPaths (std::vector<FastpassGrant>& grants) const;
    void SendAllocations (uint64_t batchFirstSlot,
                          std::vector<std::vector<FastpassAllocEntry>> perSender);

    FastpassArbiterConfig m_config;
    std::unordered_map<uint64_t, Demand> m_demands;
    struct Granted
    {
        uint32_t slots{0}; ///< timeslots granted to the flow, ever
        Time lastSent;     ///< when the last ALLOC naming the flow left
    };

    std::unordered_map<uint64_t, Granted> m_granted;
    std::set<std::pair<uint64_t, uint64_t>> m_order; ///< (OrderKey, flowId)
    std::vector<uint32_t> m_srcFlows;                ///< flows with demand per sender
    std::vector<uint32_t> m_dstFlows;                ///< flows with demand per receiver
    uint32_t m_activeSrcs{0};
    uint32_t m_activeDsts{0};
    std::vector<uint64_t> m_srcStamp; ///< slot + 1 if the sender is used in that slot
    std::vector<uint64_t> m_dstStamp;
    EventId m_passEvent;
    uint64_t m_requests{0};
    uint64_t m_requestEntries{0};
    uint64_t m_grants{0};
    uint64_t m_passes{0};
    uint64_t m_allocFrames{0};
    uint64_t m_lostGrants{0};
    TracedCallback<const FastpassSlotRecord&> m_slotTrace;
};

} // namespace ns3

#endif // DISAGGSIM_FASTPASS_ARBITER_H
