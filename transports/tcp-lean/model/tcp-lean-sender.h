/*
 * disaggsim: the sending end of one lean TCP connection: NewReno or DCTCP congestion
 * control, SACK loss recovery (RFC 6675), RTO (RFC 6298).
 */
#ifndef DISAGGSIM_TCP_LEAN_SENDER_H
#define DISAGGSIM_TCP_LEAN_SENDER_H

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/simple-ref-count.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ns3
{

class TcpLeanHost;

/// Window growth rule: ns-3's TcpNewReno (the `tcp-ns3` transport) or its TcpLinuxReno, the
/// base of ns-3's TcpDctcp (`dctcp-ns3`).  doc/tcp-lean.md §2.
enum class TcpLeanGrowth : uint8_t
{
    NEW_RENO,
    LINUX_RENO,
};

/**
 * \brief Configuration every sender of a run shares (TcpLeanFlowTransport's attributes,
 * resolved once; doc/tcp-lean.md gives each value's source).
 */
struct TcpLeanSenderConfig
{
    uint32_t mssBytes{1460};
    uint32_t initialCwndSegments{10}; ///< RFC 6928
    uint32_t dupThresh{3};            ///< RFC 6675 §2 DupThresh
    Time minRto{MicroSeconds (200)};  ///< RFC 6298 §2.4 lower bound (datacenter value)
    Time clockGranularity{MicroSeconds (1)}; ///< G of RFC 6298 §2
    Time initialRto{MicroSeconds (200)}; ///< RTO before the first RTT sample (RFC 6298 §2.1), doc §1
    TcpLeanGrowth growth{TcpLeanGrowth::NEW_RENO};
    bool dctcp{false};    ///< ECT data, α and the α/2 cut (RFC 8257 §3.3)
    bool prr{true};       ///< recovery sends per RFC 6937 PRR (ns-3's default recovery)
    /// DCTCP's ECE response as ns-3.37's TcpSocketBase::EnterCwr + TcpDctcp::GetSsThresh: an
    /// ECE cuts in fast recovery and after an RTO too (leaving recovery for CWR), and the cut
    /// has no 2-segment floor (doc §2); false = RFC 8257 §3.3 / Linux (Open state only, ≥ 2).
    bool ns3DctcpEce{true};
    /// NewReno's fast-recovery ssthresh = pipe / 2 as ns-3.37 (BytesInFlight ()), not FlightSize / 2.
    bool ns3PipeSsthresh{true};
    /// ns-3.37's Disorder state (TcpSocketBase::DupAck/ProcessAck): an ACK carrying new SACK
    /// information counts as a duplicate even when it advances SND.UNA, and does not grow the
    /// window; false = RFC 6675 §2 / RFC 5681 (DupAcks reset by every cumulative ACK).
    bool ns3Disorder{true};
    double dctcpG{1.0 / 16};     ///< RFC 8257 §4.2 / Alizadeh et al. SIGCOMM'10 §3.1
    double dctcpAlphaInit{1.0};  ///< RFC 8257 §3.3 (Linux dctcp_alpha_on_init = 1024/1024)
};

/**
 * \brief The sending end of one flow's connection (doc/tcp-lean.md §2–§4).
 *
 * Sequence numbers are segment indices: segment i carries bytes [i × MSS, min((i + 1) × MSS,
 * size)), and retransmissions keep those boundaries.  The connection exists already when
 * the flow starts (as with `tcp-ns3`, whose connections open ≥ 5 ms ahead): cwnd =
 * InitialCwnd, ssthresh = ∞, and no RTT sample yet (the handshake gives none in ns-3's TCP
 * either), so the RTO is InitialRto until the first ACK of data.
 *
 * - Sending (RFC 6675 §5 "pipe"): a segment goes out when its bytes fit in cwnd − pipe.
 * - Growth on every ACK that advances SND.UNA outside recovery/CWR: NEW_RENO: cwnd += MSS in
 *   slow start, else += max(1, MSS² / cwnd) (RFC 5681 §3.1, as ns-3's TcpNewReno);
 *   LINUX_RENO: += segments acked in slow start (up to ssthresh), else +1 MSS per cwnd
 *   segments acked (ns-3's TcpLinuxReno, Linux tcp_cong_avoid_ai).
 * - Loss recovery: RFC 6675 (SACK scoreboard, IsLost, NextSeg rules 1–3) entered on the
 *   DupThresh-th duplicate ACK or when SND.UNA's segment IsLost; cwnd = ssthresh =
 *   max(FlightSize / 2, 2 MSS) (RFC 5681 eq. 4); leaves when SND.UNA passes RecoveryPoint.
 *   A partial ACK resends the first unacknowledged segment at once and, the first time
 *   only, restarts the timer (RFC 6582 §3.2, §4.1 "Impatient"; ns-3's ProcessAck).
 * - RTO (RFC 6298): SRTT/RTTVAR from one sample per advancing ACK (Karn: never from a
 *   retransmitted segment), RTO = max(MinRto, SRTT + max(G, 4 RTTVAR)), restarted on every
 *   advancing ACK, doubled per expiry; on expiry ssthresh = max(FlightSize / 2, 2 MSS),
 *   cwnd = 1 MSS, every unSACKed segment is lost and is resent in slow start (RFC 6675 §5.1).
 * - DCTCP (RFC 8257 §3.3): bytes acked, and those acked by ACKs with ECE, per observation
 *   window (one window of data); at its end α ← (1 − g) α + g × marked / acked; on an ECE
 *   outside CWR and recovery, cwnd ← max(cwnd (1 − α / 2), 2 MSS), ssthresh ← cwnd, once
 *   per window (CWR until SND.UNA passes the data sent at the cut).
 */
class TcpLeanSender : public SimpleRefCount<TcpLeanSender>
{
  public:
    /// Called once, when the last byte is acknowledged: flow id, time.
    using AckedCallback = std::function<void (uint64_t flowId, Time acked)>;

    TcpLeanSender (const TcpLeanSenderConfig& config, TcpLeanHost* host, uint64_t flowId,
                   uint16_t dstHost, uint64_t sizeBytes, uint32_t dataFlowHash,
                   AckedCallback acked);
    ~TcpLeanSender ();

    /// Send the initial window now (the flow's start).
    void Start (Time now);
    /// An ACK arrived: cumulative ACK \p ackBytes; \p sackOffset, if \p hasSack, the offset of
    /// the out-of-order segment it answers; \p ece = ECN-Echo.
    void ReceiveAck (uint32_t ackBytes, bool hasSack, uint32_t sackOffset, bool ece, Time now);

    bool IsFinished () const
    {
        return m_finished;
    }

    uint32_t GetCwndBytes () const
    {
        return m_cwnd;
    }

    uint32_t GetSsthreshBytes () const
    {
        return m_ssthresh;
    }

    double GetAlpha () const
    {
        return m_alpha;
    }

    Time GetRto () const
    {
        return m_rto;
    }

    uint64_t GetTimeouts () const
    {
        return m_timeouts;
    }

    uint64_t GetFastRetransmits () const
    {
        return m_fastRetransmits;
    }

    uint64_t GetDataPacketsSent () const
    {
        return m_dataPacketsSent;
    }

    uint64_t GetEcnCuts () const
    {
        return m_ecnCuts;
    }

  private:
    enum SegmentFlags : uint8_t
    {
        SACKED = 1,
        RETRANSMITTED = 2, ///< retransmitted since the last RTO (RFC 6675 pipe counts it twice)
    };

    uint32_t SegmentBytes (uint32_t segment) const;
    /// RFC 6675 §4 IsLost: DupThresh segments SACKed above \p segment (or, after an RTO,
    /// every unSACKed segment below the RTO's recovery point).
    bool IsLost (uint32_t segment) const;
    /// RFC 6675 §4 SetPipe, in bytes.
    uint32_t Pipe () const;
    /// RFC 6675 §4 NextSeg; \returns m_nSegments if nothing may be sent.
    uint32_t NextSegment () const;
    /// RFC 5681 FlightSize: bytes sent and not cumulatively acknowledged (SND.NXT − SND.UNA).
    uint32_t FlightSize () const;
    /// Send what cwnd − pipe allows.
    void SendPending (Time now);
    void SendSegment (uint32_t segment, Time now);
    void EnterRecovery (uint32_t delivered, Time now);
    /// RFC 6937 PRR: cwnd = pipe + the bytes PRR lets out after \p delivered more arrived.
    void ProportionalRateReduction (uint32_t delivered);
    void IncreaseWindow (uint32_t segmentsAcked);
    void UpdateAlpha (uint32_t ackedBytes, bool ece);
    void SampleRtt (Time rtt);
    void RestartRto (Time now);
    void OnRtoEvent (Time now);
    void OnRto (Time now);
    void ScheduleRtoEvent (Time now, Time delay);

    const TcpLeanSenderConfig& m_config;
    TcpLeanHost* m_host;
    uint64_t m_flowId;
    uint64_t m_sizeBytes;
    uint32_t m_nSegments;
    uint32_t m_dataFlowHash;
    uint16_t m_dstHost;
    bool m_finished{false};
    bool m_inRecovery{false};
    bool m_inCwr{false};
    bool m_afterRto{false};
    bool m_firstPartialAck{false}; ///< no partial ACK yet in this recovery
    bool m_rtoEventPending{false};

    // sequence state, in segments
    uint32_t m_sndUna{0};
    uint32_t m_sndNxt{0}; ///< HighData + 1
    uint32_t m_highRxt{0};    ///< RFC 6675 HighRxt + 1 (next retransmission candidate)
    uint32_t m_recoveryPoint{0};
    uint32_t m_cwrPoint{0};
    uint32_t m_highSacked{0}; ///< one above the highest SACKed segment
    uint32_t m_sackedCount{0};  ///< SACKed segments at or above SND.UNA
    uint32_t m_retxOutstanding{0};
    uint32_t m_dupAcks{0};
    std::vector<uint8_t> m_flags;   ///< SegmentFlags per segment
    std::vector<Time> m_sentAt;     ///< last transmission time per segment

    // congestion control, bytes
    uint32_t m_cwnd;
    uint32_t m_ssthresh{UINT32_MAX};
    uint32_t m_cwndCount{0}; ///< LINUX_RENO's segments acked in congestion avoidance
    double m_alpha;
    uint32_t m_alphaWindowEnd{0}; ///< segment that ends the α observation window
    uint64_t m_alphaAckedBytes{0};
    uint64_t m_alphaMarkedBytes{0};
    // RFC 6937 PRR, bytes
    uint32_t m_recoverFs{0};
    uint32_t m_prrDelivered{0};
    uint32_t m_prrOut{0};

    // RFC 6298
    Time m_srtt;
    Time m_rttvar;
    Time m_rto;
    uint32_t m_backoff{1};
    bool m_rttSampled{false};
    Time m_rtoDeadline{Time::Max ()};
    Time m_rtoEventAt; ///< when the pending timer event fires
    EventId m_rtoEvent;

    uint64_t m_timeouts{0};
    uint64_t m_fastRetransmits{0};
    uint64_t m_dataPacketsSent{0};
    uint64_t m_ecnCuts{0};
    AckedCallback m_acked;
};

} // namespace ns3

#endif // DISAGGSIM_TCP_LEAN_SENDER_H
