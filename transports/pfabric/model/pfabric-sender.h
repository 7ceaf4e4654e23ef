/*
 * disaggsim: pFabric end-host sender: line-rate start, window, fixed RTO, probe mode.
 */
#ifndef DISAGGSIM_PFABRIC_SENDER_H
#define DISAGGSIM_PFABRIC_SENDER_H

#include "pfabric-header.h"
#include "pfabric-packet-bits.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

namespace ns3
{

class PfabricHost;

/**
 * \brief The sending side of one pFabric flow (doc/pfabric.md §3; Alizadeh et al.
 * SIGCOMM'13 §4.3; the reference simulator YAPS, coresim/flow.cpp and ext/pfabricflow.cpp).
 *
 * - Start: the whole initial window leaves at once (line rate), InitialCwnd packets
 *   (12 = BDP at 10 Gbps, SIGCOMM'13 §5.1; YAPS init_cwnd 12).
 * - Every data packet carries priority = flow bytes not yet acknowledged, cumulatively or
 *   selectively (SIGCOMM'13 §4.1; YAPS Flow::get_priority).
 * - Window: cwnd packets beyond the cumulative ACK, plus the packets SACKed above it, which
 *   are skipped; on each ACK that advances the cumulative ACK cwnd grows by 1 packet below
 *   ssthresh and by 1 packet per cwnd such ACKs above it, capped at MaxCwnd (YAPS
 *   PFabricFlow::increase_cwnd; max_cwnd 15), and the window is refilled.  ACKs that do not
 *   advance it only update the SACK scoreboard (YAPS Flow::receive_ack).
 * - No fast retransmit.  A fixed timer Rto (45 us ~ 3 RTT at 10 Gbps, §5.1) is armed when
 *   data is sent with none armed and re-armed on every advancing ACK; on expiry ssthresh =
 *   max(cwnd / 2, 2), cwnd = 1 and sending restarts at the cumulative ACK (YAPS
 *   handle_timeout).
 * - After ProbeAfterTimeouts consecutive timeouts the flow is in probe mode: each timeout
 *   sends one PROBE (1 B payload) instead of data; the first advancing ACK or the ACK of a
 *   probe ends it and sending resumes in slow start (§4.3; not in YAPS; 0 disables).
 * - The flow is complete when the last byte is acknowledged (FlowAcked trace).
 */
class PfabricSender : public Object
{
  public:
    static TypeId GetTypeId ();
    PfabricSender ();
    /**
     * A new sender with \p prototype's configuration (its attributes, window and timeout,
     * and FlowAcked sinks) and no flow: CopyObject<PfabricSender> (prototype) is how
     * PfabricFlowTransport makes one per flow, reading the attributes once instead of per
     * flow (CreateObject's attribute pass, ObjectBase::ConstructSelf, was 2.4 % of the heavy
     * incast's run time: bench/RESULTS.md, "What moved the numbers").
     */
    PfabricSender (const PfabricSender& prototype);
    PfabricSender& operator= (const PfabricSender&) = delete;
    ~PfabricSender () override;

    /**
     * Set the flow up.  \p sizeBytes > 0; \p host is the sending host's stack, which owns this
     * object and puts its packets on the wire; \p dstHost the receiver's host index.
     */
    void Setup (Ptr<PfabricHost> host, uint64_t flowId, uint16_t dstHost, uint64_t sizeBytes);

    /// Set the resolved window (packets) and timeout; PfabricFlowTransport calls it with the
    /// attribute values, 0s replaced by the topology-derived ones (doc/pfabric.md §6).
    void SetWindowAndRto (uint32_t initialCwnd, uint32_t maxCwnd, Time rto);

    /// Start sending now (the flow's start time).
    void Start ();

    /// An ACK of this flow arrived: \p ackSeq = cumulative ACK, \p sackSeq = the data offset
    /// it answers, \p probe = it answers a probe; \p now = Simulator::Now ().
    void ReceiveAck (uint32_t ackSeq, uint32_t sackSeq, bool probe, Time now);

    bool IsFinished () const
    {
        return m_finished;
    }

    uint32_t GetCwnd () const
    {
        return m_cwnd;
    }

    uint64_t GetTimeouts () const
    {
        return m_timeouts;
    }

    /// \returns timer expiries deferred because the flow's packet was still in the local NIC.
    uint64_t GetDeferredTimeouts () const
    {
        return m_deferredTimeouts;
    }

    uint64_t GetDataPacketsSent () const
    {
        return m_dataPacketsSent;
    }

    /// Signature of FlowAcked: flow id, start time, time the last byte was acknowledged.
    typedef void (*FlowAckedCallback) (uint64_t flowId, Time start, Time acked);

  protected:
    void DoDispose () override;

  private:
    /// Send what the window allows (YAPS Flow::send_pending_data).
    /// \p now is Simulator::Now () here and below: each event reads the clock once.
    void SendPending (Time now);
    void SendData (uint32_t packetIndex, Time now);
    void SendProbe (Time now);
    /// Build one frame of this flow (pFabric header + fabric header) and hand it to the host.
    void SendFrame (uint32_t payloadBytes, uint32_t packetIndex, uint8_t flags, Time now);
    uint32_t PayloadOf (uint32_t packetIndex) const;
    /// Remaining flow bytes not acknowledged cumulatively or selectively: the priority.
    uint32_t Remaining () const;
    /// Arm the timer to expire Rto from now (YAPS set_timeout).
    void ArmRto (Time now);
    void DisarmRto ();
    bool IsRtoArmed () const
    {
        return m_rtoDeadline != Time::Max ();
    }
    /// The timer event: a real timeout if the deadline has come, else it re-schedules itself.
    void OnRtoEvent (Time now);
    /// Schedule the timer event \p delay after \p now (a pooled event, see topologies/model/
    /// pooled-event.h: in an incast it is one event per timeout).
    void ScheduleRtoEvent (Time now, Time delay);
    void OnRto (Time now);
    void IncreaseCwnd ();

    // Members are grouped by use, not by meaning: the first block is everything the timer
    // event (OnRtoEvent -> OnRto -> SendPending -> SendFrame) and an ACK touch, packed into
    // about three cache lines.  In a heavy incast ~12k senders are in flight, each timer
    // event touches a cold sender, and perf showed OnRtoEvent's first loads of
    // m_rtoDeadline and m_deferRtoWhileQueued (on two different lines) as ~10 % of the run
    // (bench/RESULTS.md, "Profile").  Order does not change behaviour.

    // Re-arming on every ACK only moves m_rtoDeadline; at most one timer event is pending
    // (rescheduled when it fires early), so the scheduler does not fill with cancelled
    // timers.  Expiry times are the same as with cancel-and-reschedule.
    Time m_rtoDeadline{Time::Max ()};
    Time m_rto;
    bool m_rtoEventPending{false}; ///< m_rtoEvent is scheduled (cheaper than IsRunning)
    bool m_deferRtoWhileQueued{true};
    bool m_finished{false};
    bool m_probing{false};
    bool m_spray{true};
    uint16_t m_dstHost{0};
    // window state, in packets of m_mssBytes (offset = index * mss)
    uint32_t m_nextPacket{0};
    uint32_t m_cumAckPacket{0};
    uint32_t m_nPackets{0};
    uint32_t m_sackedAbove{0};
    uint32_t m_cwnd{12};
    uint32_t m_ssthresh{100000};
    uint32_t m_ackCount{0};
    uint32_t m_consecutiveTimeouts{0};
    uint32_t m_mssBytes{1460};
    uint32_t m_maxCwnd{0};
    uint32_t m_probeAfterTimeouts{5};
    uint64_t m_sizeBytes{0};
    uint64_t m_flowId{0};
    uint64_t m_timeouts{0};
    uint64_t m_dataPacketsSent{0};
    Ptr<PfabricHost> m_host;
    /// Selectively acknowledged packets, one bit each (inline for the few-page flows of DDC
    /// traces, so the timer and ACK paths touch no second allocation).
    PfabricPacketBits m_sacked;

    // cold: configuration and bookkeeping
    uint32_t m_initialCwnd{0};
    uint32_t m_initialSsthresh{100000};
    Time m_minRto;
    uint64_t m_deferredTimeouts{0};
    Time m_start;
    EventId m_rtoEvent;
    TracedCallback<uint64_t, Time, Time> m_flowAcked;
};

} // namespace ns3

#endif // DISAGGSIM_PFABRIC_SENDER_H
