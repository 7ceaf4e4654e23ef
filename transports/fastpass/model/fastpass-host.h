/*
 * disaggsim: the Fastpass endpoint of one host: its flows' senders and receivers.
 */
#ifndef DISAGGSIM_FASTPASS_HOST_H
#define DISAGGSIM_FASTPASS_HOST_H

#include "fastpass-header.h"
#include "topologies/model/fabric-host.h"

#include "ns3/callback.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"

#include <deque>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ns3
{

/// Endpoint parameters (set by FastpassFlowTransport).
struct FastpassHostConfig
{
    uint16_t arbiter{0};     ///< endpoint id of the arbiter
    Time timeslot;           ///< slot k starts at simulation time k x timeslot
    uint32_t mssBytes{1460}; ///< payload of a full data packet
    Time retransmitTimeout;  ///< silence after which a sender probes its receiver
    /// FCP (Fastpass §5): one AREQ per send opportunity with a cumulative demand per
    /// destination, ALLOCs naming destinations; false: one REQUEST per flow.
    bool perDestination{true};
    /// FCP: least time between two AREQs of the host (FastpassFlowTransport RequestGap).
    Time requestGap;
    /// Experiment knob (bench/RESULTS.md): send the packet of ALLOC entry i at the ALLOC's
    /// arrival + i timeslots, as NetSys/simulator's hosts do, instead of at its timeslot.
    bool sendOnArrival{false};
    /// Experiment knob: spray data packets over the uplinks round robin per host (as
    /// NetSys/simulator's host queue, spray_counter++ % 4) instead of the arbiter's spine.
    bool spray{false};
};

/**
 * \brief The Fastpass stack of one host (transports/fastpass/doc/fastpass.md §5).
 *
 * Control frames (REQUEST, DONE, PROBE, MISSING) never delay a data packet: the host hands
 * one to its NIC only if it ends before the next allocated timeslot starts, else it waits for
 * the gap after that timeslot's packet (the timeslot's guard, FastpassFlowTransport
 * GuardBytes).
 *
 * Requests (doc §3).  FCP (perDestination, default): the host keeps one cumulative demand per
 * destination (timeslots received + still needed beyond the allocated ones) and sends the
 * arbiter one AREQ per send opportunity (flows starting at one instant share it; then at
 * most one per requestGap) listing the destinations whose demand changed, at most
 * kFastpassMaxAreqPerFrame and no more than fit before the next data timeslot, each with
 * its shortest flow's unallocated timeslots (the arbiter's min-FCT key).  A DST_ALLOC names
 * destinations; each timeslot goes to the destination's flow with a packet to retransmit,
 * else the one with fewest packets left.  Per flow (perDestination false): each flow sends
 * its own REQUEST for ceil(size / mss) timeslots and ALLOC entries name flows.
 *
 * Sender: for each ALLOC entry it sends one data packet exactly at the start of the allocated
 * timeslot, on the allocated spine (FabricHeader::pinnedUplink), new packets in order after
 * any packet to retransmit.  Loss (§5: the endpoint, not the network, recovers, through the
 * arbiter): a sender that hears nothing (no DONE, no ALLOC) for retransmitTimeout after
 * its last request, allocation or packet acts by what it waits for.  Still waiting for
 * timeslots: it repeats its REQUEST (absolute, so idempotent: a lost REQUEST or ALLOC
 * is recovered).  Everything sent: it sends its receiver a PROBE; the MISSING reply lists
 * the packets not received; the ones sent before the PROBE (lost: retransmitTimeout exceeds
 * any one-way delay) are queued and the sender asks the arbiter for timeslots again (a new
 * absolute demand: the queued packets + the never-sent ones).  Each silent timeout
 * doubles the flow's next one (up to 64x; progress resets it), so that flows starved by
 * the allocator's order do not flood the arbiter.  Receiver: counts distinct packets; at the last
 * one it reports the flow finished and sends the sender DONE (again for any later packet or PROBE
 * of the flow).
 */
class FastpassHost : public FabricHost
{
  public:
    static TypeId GetTypeId ();
    FastpassHost ();
    ~FastpassHost () override;

    void SetConfig (const FastpassHostConfig& config);
    /// Called with the flow id when a receiver of this host has every byte.
    void SetReceivedCallback (Callback<void, uint64_t> callback);
    /// Called with the flow id when a sender of this host got DONE.
    void SetSenderDoneCallback (Callback<void, uint64_t> callback);

    /// Start sending flow \p flowId of \p sizeBytes to host \p dst (request its timeslots).
    void StartSender (uint64_t flowId, uint16_t dst, uint64_t sizeBytes);
    /// Expect flow \p flowId of \p sizeBytes from host \p src.
    void StartReceiver (uint64_t flowId, uint16_t src, uint64_t sizeBytes);

    uint64_t GetDataPacketsSent () const
    {
        return m_dataPacketsSent;
    }

    uint64_t GetRetransmissions () const
    {
        return m_retransmissions;
    }

    /// \returns ALLOC entries that arrived after their timeslot had started (sent at once).
    uint64_t GetLateAllocations () const
    {
        return m_lateAllocations;
    }

    /// \returns allocated timeslots the sender had nothing to send in.
    uint64_t GetUnusedSlots () const
    {
        return m_unusedSlots;
    }

    uint64_t GetProbes () const
    {
        return m_probes;
    }

    /// \returns REQUEST (per flow) or AREQ (FCP) frames sent.
    uint64_t GetRequestFrames () const
    {
        return m_requestFrames;
    }

    /// \returns REQUESTs repeated after a timeout without allocation.
    uint64_t GetRepeatedRequests () const
    {
        return m_repeatedRequests;
    }

  protected:
    void DoDispose () override;
    void DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now) override;

  private:
    struct Sender
    {
        uint16_t dst{0};
        uint64_t sizeBytes{0};
        uint32_t nPackets{0};
        uint32_t nextNew{0};
        std::deque<uint32_t> retransmit;
        Time deadline; ///< probe when this passes without DONE
        bool reRequested{false};
        uint32_t sentAtProbe{0};  ///< nextNew when the last PROBE left
        uint32_t pendingSlots{0}; ///< allocated timeslots not yet reached
        uint32_t sent{0};         ///< data packets sent (retransmissions included)
        uint32_t granted{0};      ///< ALLOC entries received
        uint32_t backoff{1};      ///< timeout multiplier, doubled per silent timeout (<= 64)
    };

    /// FCP state of one destination: its flows, ALLOC entries received and allocated
    /// timeslots not reached yet.
    struct Destination
    {
        std::set<uint64_t> flows;
        uint32_t received{0};
        uint32_t pending{0};
        uint32_t backoff{1}; ///< timeout multiplier of a repeated demand (<= 64)
        /// The flow whose need the last AREQ gave as `shortest` (UINT64_MAX = none).
        uint64_t hintFlow{UINT64_MAX};
    };

    struct Receiver
    {
        uint16_t src{0};
        uint32_t nPackets{0};
        uint32_t received{0};
        std::vector<bool> got;
    };

    void SendControl (uint16_t dst, FastpassHeader& header, uint64_t flowId);
    /// Hand queued control frames to the NIC while each ends before the next data timeslot.
    void TrySendControl ();
    /// Run TrySendControl at \p at unless it is due earlier.
    void RetryControlAt (Time at);
    /// Hand a frame to the NIC and account its serialization in m_nicFreeAt.
    void Transmit (Ptr<Packet> packet, const FabricHeader& frame);
    /// REQUEST the sender's cumulative demand: packets sent + to retransmit + never sent.
    void Request (uint64_t flowId, const Sender& sender);
    void Withdraw (uint64_t flowId, const Sender& sender);
    /// FCP: destination \p dst has new demand; the next AREQ lists it.
    void MarkDirty (uint16_t dst);
    /// FCP: timeslots still needed for \p dst (packets to retransmit + never sent).
    uint32_t NeededFor (const Destination& destination) const;
    /// FCP: the flow to the destination that the host's fewest-remaining order serves first
    /// once its allocated timeslots not reached yet are used up, and the timeslots it still
    /// needs beyond them ({UINT64_MAX, 0} if none).
    std::pair<uint64_t, uint32_t> ShortestUncovered (const Destination& destination) const;
    /// FCP: the next AREQ, listing up to \p maxEntries (<= kFastpassMaxAreqPerFrame) dirty
    /// destinations; \p nEntries = how many it lists.
    Ptr<Packet> BuildAreq (FabricHeader& frame, uint32_t maxEntries, uint32_t& nEntries) const;
    /// When this host sends in timeslot \p slot of an allocation that arrived \p now with
    /// offset \p slotOffset in its batch: the timeslot's start (or, with SendOnArrival, now
    /// + offset timeslots), never before \p now (a late allocation is counted); recorded in
    /// the data-time set that keeps control frames out of data timeslots.
    Time AllocatedSendTime (uint64_t slot, uint32_t slotOffset, Time now);
    void SendData (uint64_t flowId, uint64_t slot, uint16_t spine);
    /// FCP: a timeslot for \p dst: the flow to it with a packet to retransmit, else the one
    /// with fewest packets left, sends.
    void SendDataTo (uint16_t dst, uint64_t slot, uint16_t spine);
    void SendPacket (uint64_t flowId, Sender& sender, uint64_t slot, uint16_t spine);
    void ArmTimer ();
    void OnTimer ();

    FastpassHostConfig m_config;
    std::unordered_map<uint64_t, Sender> m_senders;
    std::unordered_map<uint64_t, Receiver> m_receivers;
    std::unordered_map<uint16_t, Destination> m_destinations;
    std::set<uint16_t> m_dirty; ///< FCP destinations whose demand the next AREQ carries
    EventId m_areqEvent;
    Time m_nextAreq; ///< earliest time of the next AREQ (requestGap after the last)
    uint64_t m_requestFrames{0};
    uint32_t m_sprayCounter{0};
    Callback<void, uint64_t> m_received;
    Callback<void, uint64_t> m_senderDone;
    EventId m_timer;
    std::deque<std::pair<Ptr<Packet>, FabricHeader>> m_control; ///< control frames waiting
    EventId m_controlEvent;
    std::multiset<int64_t> m_dataTimes; ///< start (ps) of every allocated timeslot ahead
    Time m_nicFreeAt;                   ///< end of the last frame handed to the NIC
    uint64_t m_dataPacketsSent{0};
    uint64_t m_retransmissions{0};
    uint64_t m_lateAllocations{0};
    uint64_t m_unusedSlots{0};
    uint64_t m_probes{0};
    uint64_t m_repeatedRequests{0};
};

} // namespace ns3

#endif // DISAGGSIM_FASTPASS_HOST_H
