/*
 * disaggsim: the sending end of one lean TCP connection: NewReno or DCTCP congestion
 * control, SACK loss recovery (RFC 6675), RTO (RFC 6298).
 */
#include "tcp-lean-sender.h"

#include "tcp-lean-header.h"
#include "tcp-lean-host.h"
#include "topologies/model/pooled-event.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpLeanSender");

TcpLeanSender::TcpLeanSender (const TcpLeanSenderConfig& config, TcpLeanHost* host,
                              uint64_t flowId, uint16_t dstHost, uint64_t sizeBytes,
                              uint32_t dataFlowHash, AckedCallback acked)
      : m_config (config)
      , m_host (host)
      , m_flowId (flowId)
      , m_sizeBytes (sizeBytes)
      , m_nSegments (static_cast<uint32_t> ((sizeBytes + config.mssBytes - 1) / config.mssBytes))
      , m_dataFlowHash (dataFlowHash)
      , m_dstHost (dstHost)
      , m_flags (m_nSegments, 0)
      , m_sentAt (m_nSegments)
      , m_cwnd (config.initialCwndSegments * config.mssBytes)
      , m_alpha (config.dctcpAlphaInit)
      , m_rto (config.initialRto)
      , m_acked (std::move (acked))
{
    NS_ABORT_MSG_IF (sizeBytes == 0, "TcpLeanSender: flow " << flowId << " has size 0");
    NS_ABORT_MSG_IF (sizeBytes >= (uint64_t (1) << 32),
                     "TcpLeanSender: flow " << flowId << " size " << sizeBytes
                                            << " B does not fit the 32-bit sequence space");
}

TcpLeanSender::~TcpLeanSender ()
{
    m_rtoEvent.Cancel ();
}

uint32_t
TcpLeanSender::SegmentBytes (uint32_t segment) const
{
    const uint64_t offset = uint64_t (segment) * m_config.mssBytes;
    return static_cast<uint32_t> (std::min<uint64_t> (m_config.mssBytes, m_sizeBytes - offset));
}

bool
TcpLeanSender::IsLost (uint32_t segment) const
{
    if (m_flags[segment] & SACKED)
    {
        return false;
    }
    if (m_afterRto && segment < m_recoveryPoint)
    {
        return true;
    }
    uint32_t sackedAbove = 0;
    for (uint32_t s = segment + 1; s < m_highSacked; ++s)
    {
        if ((m_flags[s] & SACKED) && ++sackedAbove >= m_config.dupThresh)
        {
            return true;
        }
    }
    return false;
}

uint32_t
TcpLeanSender::FlightSize () const
{
    const uint64_t high =
        std::min<uint64_t> (uint64_t (m_sndNxt) * m_config.mssBytes, m_sizeBytes);
    return static_cast<uint32_t> (high - uint64_t (m_sndUna) * m_config.mssBytes);
}

uint32_t
TcpLeanSender::Pipe () const
{
    if (m_sackedCount == 0 && m_retxOutstanding == 0 && !m_afterRto)
    {
        // Nothing SACKed, lost or resent: pipe = the bytes outstanding.
        if (m_sndNxt == m_sndUna)
        {
            return 0;
        }
        return FlightSize ();
    }
    // RFC 6675 §4 SetPipe, one pass from the top counting SACKed segments above.
    uint32_t pipe = 0;
    uint32_t sackedAbove = 0;
    for (uint32_t s = m_sndNxt; s-- > m_sndUna;)
    {
        const uint8_t flags = m_flags[s];
        if (flags & SACKED)
        {
            ++sackedAbove;
            continue;
        }
        const bool lost =
            sackedAbove >= m_config.dupThresh || (m_afterRto && s < m_recoveryPoint);
        if (!lost)
        {
            pipe += SegmentBytes (s);
        }
        if (flags & RETRANSMITTED)
        {
            pipe += SegmentBytes (s);
        }
    }
    return pipe;
}

uint32_t
TcpLeanSender::NextSegment () const
{
    if (m_inRecovery || m_afterRto)
    {
        // Rule 1: the first unSACKed segment above HighRxt that IsLost.
        const uint32_t top = m_afterRto ? std::max (m_recoveryPoint, m_highSacked) : m_highSacked;
        const uint32_t start = std::max (m_highRxt, m_sndUna);
        if (start < std::min (top, m_sndNxt))
        {
            uint32_t sackedAbove = 0;
            for (uint32_t s = start + 1; s < m_highSacked; ++s)
            {
                sackedAbove += (m_flags[s] & SACKED) ? 1 : 0;
            }
            for (uint32_t s = start; s < std::min (top, m_sndNxt); ++s)
            {
                if (s > start && (m_flags[s] & SACKED))
                {
                    --sackedAbove;
                }
                if (m_flags[s] & SACKED)
                {
                    continue;
                }
                if (sackedAbove >= m_config.dupThresh || (m_afterRto && s < m_recoveryPoint))
                {
                    return s;
                }
                if (!m_afterRto && sackedAbove < m_config.dupThresh)
                {
                    break; // no segment further up has DupThresh SACKed above it
                }
            }
        }
    }
    // Rule 2: new data (the receive window is never the limit, doc §2).
    if (m_sndNxt < m_nSegments)
    {
        return m_sndNxt;
    }
    if (m_inRecovery)
    {
        // Rule 3: an unSACKed segment above HighRxt that is not yet deemed lost.
        for (uint32_t s = std::max (m_highRxt, m_sndUna); s < std::min (m_highSacked, m_sndNxt);
             ++s)
        {
            if (!(m_flags[s] & SACKED))
            {
                return s;
            }
        }
    }
    return m_nSegments;
}

void
TcpLeanSender::Start (Time now)
{
    SendPending (now);
}

void
TcpLeanSender::SendPending (Time now)
{
    uint32_t pipe = Pipe ();
    while (true)
    {
        const uint32_t segment = NextSegment ();
        if (segment >= m_nSegments)
        {
            return;
        }
        const uint32_t bytes = SegmentBytes (segment);
        if (uint64_t (pipe) + bytes > m_cwnd)
        {
            return;
        }
        SendSegment (segment, now);
        pipe += bytes;
    }
}

void
TcpLeanSender::SendSegment (uint32_t segment, Time now)
{
    if (segment < m_sndNxt)
    {
        // a retransmission (RFC 6675 HighRxt; counted in pipe twice until SACKed or acked)
        m_highRxt = std::max (m_highRxt, segment + 1);
        if (!(m_flags[segment] & RETRANSMITTED))
        {
            m_flags[segment] |= RETRANSMITTED;
            ++m_retxOutstanding;
        }
    }
    else
    {
        m_sndNxt = segment + 1;
    }
    m_sentAt[segment] = now;
    ++m_dataPacketsSent;
    const uint32_t payloadBytes = SegmentBytes (segment);
    if (m_inRecovery || (m_inCwr && m_config.ns3DctcpEce))
    {
        m_prrOut += payloadBytes;
    }
    FabricHeader frame;
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_dstHost;
    frame.protocol = kTcpLeanProtocol;
    frame.ecn = m_config.dctcp ? FabricEcn::ECT0 : FabricEcn::NOT_ECT;
    frame.flowHash = m_dataFlowHash;
    frame.payloadBytes = payloadBytes;
    frame.transportFlags = TCP_LEAN_DATA;
    frame.flowId = m_flowId;
    frame.seq = segment * m_config.mssBytes;
    if (m_rtoDeadline == Time::Max ())
    {
        RestartRto (now); // RFC 6298 §5.1
    }
    if (m_host->DropsAtNic (frame, payloadBytes + kTcpLeanHeaderBytes))
    {
        return;
    }
    m_host->Send (Create<Packet> (payloadBytes + kTcpLeanHeaderBytes), frame, now);
}

void
TcpLeanSender::ReceiveAck (uint32_t ackBytes, bool hasSack, uint32_t sackOffset, bool ece,
                           Time now)
{
    if (m_finished)
    {
        return;
    }
    const uint32_t ackSegment =
        ackBytes >= m_sizeBytes ? m_nSegments : ackBytes / m_config.mssBytes;
    if (ackSegment < m_sndUna)
    {
        return; // an old ACK, reordered behind a newer one
    }
    bool newSack = false;
    uint32_t delivered = 0; ///< bytes newly SACKed or newly acknowledged, not SACKed before
    if (hasSack)
    {
        const uint32_t s = sackOffset / m_config.mssBytes;
        if (s >= ackSegment && s < m_sndNxt && !(m_flags[s] & SACKED))
        {
            if (m_flags[s] & RETRANSMITTED)
            {
                --m_retxOutstanding;
            }
            m_flags[s] |= SACKED;
            ++m_sackedCount;
            m_highSacked = std::max (m_highSacked, s + 1);
            newSack = true;
            delivered += SegmentBytes (s);
        }
    }
    const bool advanced = ackSegment > m_sndUna;
    const bool wasAfterRto = m_afterRto; // ns-3's Loss state: ProcessAck's CA_LOSS branch
    uint32_t segmentsAcked = 0;
    uint32_t ackedBytes = 0;
    if (advanced)
    {
        // Karn: a sample only from a segment never resent (ns-3 EstimateRtt: the oldest
        // segment this ACK covers).
        if (!(m_flags[m_sndUna] & RETRANSMITTED))
        {
            SampleRtt (now - m_sentAt[m_sndUna]);
        }
        for (uint32_t s = m_sndUna; s < ackSegment; ++s)
        {
            if (m_flags[s] & SACKED)
            {
                --m_sackedCount;
            }
            else
            {
                delivered += SegmentBytes (s);
                if (m_flags[s] & RETRANSMITTED)
                {
                    --m_retxOutstanding;
                }
            }
            ackedBytes += SegmentBytes (s);
        }
        segmentsAcked = ackSegment - m_sndUna;
        m_sndUna = ackSegment;
        m_sndNxt = std::max (m_sndNxt, m_sndUna);
        if (!(m_config.ns3Disorder && newSack))
        {
            m_dupAcks = 0;
        }
        m_backoff = 1;
        if (m_sndUna == m_nSegments)
        {
            m_finished = true;
            m_rtoDeadline = Time::Max ();
            m_rtoEvent.Cancel ();
            m_rtoEventPending = false;
            m_acked (m_flowId, now);
            return;
        }
    }
    if (newSack && !m_afterRto && !m_inRecovery && (!advanced || m_config.ns3Disorder))
    {
        // RFC 6675 §2: an ACK carrying new SACK information; ns-3 counts it even when it
        // advances SND.UNA (Ns3Disorder: TcpSocketBase::ProcessAck isDupack)
        ++m_dupAcks;
    }

    // ns-3.37 (Ns3Disorder): an ACK with new SACK information that leaves the socket in
    // Disorder (not in Loss, Recovery or CWR) neither grows the window nor calls NewAck, so the
    // retransmission timer keeps running from its last restart (TcpSocketBase::ProcessAck).
    const bool disorder = m_config.ns3Disorder && !wasAfterRto && !m_inRecovery;
    if (m_config.dctcp)
    {
        UpdateAlpha (ackedBytes, ece && advanced);
    }

    if (m_inRecovery && m_sndUna >= m_recoveryPoint)
    {
        m_inRecovery = false;
        m_cwnd = m_ssthresh; // RFC 6675 §5 step 4.2; PRR's end (RFC 6937 §3)
    }
    if (m_afterRto && m_sndUna >= m_recoveryPoint)
    {
        m_afterRto = false;
    }
    if (m_inCwr && m_sndUna > m_cwrPoint)
    {
        m_inCwr = false;
        if (m_config.ns3DctcpEce)
        {
            m_cwnd = m_ssthresh; // ns-3 ReceivedAck: CWR's end, cwnd = ssthresh
        }
    }
    if (m_config.ns3DctcpEce && m_config.dctcp && ece && advanced && !m_inCwr)
    {
        // ns-3.37 TcpSocketBase::ReceivedAck: a valid ECE in any state but CWR (fast recovery
        // and loss after an RTO too, which it leaves) calls EnterCwr: ssthresh =
        // TcpDctcp::GetSsThresh = cwnd (1 − α / 2), no floor; cwnd is then PRR's (RFC 6937,
        // TcpPrrRecovery, RecoverFS = the data not acknowledged) until SND.UNA passes the data
        // sent so far, and ssthresh at the end.  PRR runs on entry and again for the same ACK
        // in ProcessAck (both count its delivered bytes), as there.
        m_ssthresh = static_cast<uint32_t> (m_cwnd * (1.0 - m_alpha / 2.0));
        m_inRecovery = false;
        m_inCwr = true;
        m_cwrPoint = m_sndNxt;
        ++m_ecnCuts;
        m_recoverFs = FlightSize ();
        m_prrDelivered = 0;
        m_prrOut = 0;
        ProportionalRateReduction (delivered);
    }
    if (m_config.ns3DctcpEce && m_inCwr && advanced)
    {
        ProportionalRateReduction (delivered); // ns-3 ProcessAck, CA_CWR: DoRecovery
    }

    if (m_inRecovery && m_config.prr)
    {
        ProportionalRateReduction (delivered);
    }
    if (!m_inRecovery && !m_afterRto &&
        (m_dupAcks >= m_config.dupThresh || (m_sackedCount > 0 && IsLost (m_sndUna))))
    {
        EnterRecovery (delivered, now);
    }
    else if (!m_config.ns3DctcpEce && m_config.dctcp && ece && advanced && !m_inCwr &&
             !m_inRecovery && !m_afterRto)
    {
        // RFC 8257 §3.3: once per window of data, cwnd ← cwnd × (1 − α / 2), at least 2
        // segments (Linux dctcp_ssthresh), from the Open state only (Linux tcp_enter_cwr).
        const auto cut = static_cast<uint32_t> (m_cwnd * (1.0 - m_alpha / 2.0));
        m_cwnd = std::max (cut, 2 * m_config.mssBytes);
        m_ssthresh = m_cwnd;
        m_inCwr = true;
        m_cwrPoint = m_sndNxt;
        ++m_ecnCuts;
    }
    else if (advanced && !m_inRecovery && !m_inCwr && !(disorder && newSack))
    {
        IncreaseWindow (segmentsAcked);
    }

    if (advanced && m_inRecovery)
    {
        // A partial ACK (RFC 6582 §3.2 step 5, as ns-3's ProcessAck): the first segment not
        // acknowledged is taken as lost too and resent at once, unless it was already; the
        // timer restarts on the first partial ACK only ("Impatient" variant, RFC 6582 §4.1;
        // ns-3 NewAck (ack, m_isFirstPartialAck)).
        if (!(m_flags[m_sndUna] & (SACKED | RETRANSMITTED)))
        {
            SendSegment (m_sndUna, now);
        }
        if (m_firstPartialAck)
        {
            m_firstPartialAck = false;
            RestartRto (now);
        }
    }
    else if (advanced && !(disorder && newSack && !m_inCwr))
    {
        RestartRto (now); // RFC 6298 §5.3
    }
    SendPending (now);
}

void
TcpLeanSender::EnterRecovery (uint32_t delivered, Time now)
{
    // RFC 6675 §5 step (4): RecoveryPoint = HighData; ssthresh = cwnd = FlightSize / 2
    // (RFC 5681 eq. (4): at least 2 SMSS); retransmit the first segment not acknowledged.
    ++m_fastRetransmits;
    const uint32_t flightSize = FlightSize ();
    // ns-3.37 EnterRecovery passes BytesInFlight () (RFC 6675 pipe, the head marked lost) to
    // TcpNewReno::GetSsThresh (Ns3PipeSsthresh, NewReno only).
    const uint32_t halved = m_config.ns3PipeSsthresh && m_config.growth == TcpLeanGrowth::NEW_RENO
                                ? Pipe () : flightSize;
    m_ssthresh = std::max (halved / 2, 2 * m_config.mssBytes);
    m_cwnd = m_ssthresh;
    m_inRecovery = true;
    m_inCwr = false;
    m_recoveryPoint = m_sndNxt;
    m_highRxt = m_sndUna;
    m_dupAcks = 0;
    m_firstPartialAck = true;
    if (m_config.prr)
    {
        // RFC 6937 §3: RecoverFS = the data outstanding (ns-3 TcpPrrRecovery: UnAckDataCount)
        m_recoverFs = flightSize;
        m_prrDelivered = 0;
        m_prrOut = 0;
        ProportionalRateReduction (delivered);
    }
    SendSegment (m_sndUna, now);
}

void
TcpLeanSender::ProportionalRateReduction (uint32_t delivered)
{
    // RFC 6937 §3 (PRR-SSRB), as ns-3's TcpPrrRecovery::DoRecovery: cwnd = pipe + sndcnt.
    m_prrDelivered += delivered;
    const int64_t pipe = Pipe ();
    int64_t sendCount;
    if (pipe > int64_t (m_ssthresh))
    {
        const uint64_t share = (uint64_t (m_prrDelivered) * m_ssthresh + m_recoverFs - 1) /
                               std::max<uint64_t> (m_recoverFs, 1);
        sendCount = int64_t (share) - int64_t (m_prrOut);
    }
    else
    {
        const int64_t limit =
            std::max<int64_t> (int64_t (m_prrDelivered) - m_prrOut, delivered) + m_config.mssBytes;
        sendCount = std::min<int64_t> (limit, int64_t (m_ssthresh) - pipe);
    }
    // the fast retransmit itself always goes (ns-3: at least one segment before any is out)
    sendCount = std::max<int64_t> (sendCount, m_prrOut > 0 ? 0 : m_config.mssBytes);
    m_cwnd = static_cast<uint32_t> (pipe + sendCount);
}

void
TcpLeanSender::IncreaseWindow (uint32_t segmentsAcked)
{
    const uint32_t mss = m_config.mssBytes;
    if (m_config.growth == TcpLeanGrowth::NEW_RENO)
    {
        // ns-3 TcpNewReno::IncreaseWindow: one MSS per ACK in slow start (RFC 5681 §3.1
        // "at most SMSS per ACK"), the rest of the ACK's segments to congestion avoidance.
        if (m_cwnd < m_ssthresh)
        {
            m_cwnd += mss;
            --segmentsAcked;
        }
        if (m_cwnd >= m_ssthresh && segmentsAcked > 0)
        {
            m_cwnd += std::max<uint32_t> (1, static_cast<uint32_t> (double (mss) * mss / m_cwnd));
        }
        return;
    }
    // ns-3 TcpLinuxReno (Linux tcp_slow_start / tcp_cong_avoid_ai).
    if (m_cwnd < m_ssthresh)
    {
        m_cwnd = static_cast<uint32_t> (
            std::min<uint64_t> (uint64_t (m_cwnd) + uint64_t (segmentsAcked) * mss, m_ssthresh));
        return;
    }
    const uint32_t w = std::max<uint32_t> (1, m_cwnd / mss);
    if (m_cwndCount >= w)
    {
        m_cwndCount = 0;
        m_cwnd += mss;
    }
    m_cwndCount += segmentsAcked;
    if (m_cwndCount >= w)
    {
        const uint32_t delta = m_cwndCount / w;
        m_cwndCount -= delta * w;
        m_cwnd += delta * mss;
    }
}

void
TcpLeanSender::UpdateAlpha (uint32_t ackedBytes, bool ece)
{
    // RFC 8257 §3.3 steps 1-7: count bytes acked and those acked with ECE; when SND.UNA passes
    // the window's end, α ← (1 − g) α + g M / A and the next window ends at SND.NXT.
    if (m_alphaWindowEnd == 0)
    {
        m_alphaWindowEnd = m_sndNxt; // the first window: what was sent before the first ACK
    }
    m_alphaAckedBytes += ackedBytes;
    m_alphaMarkedBytes += ece ? ackedBytes : 0;
    if (m_sndUna >= m_alphaWindowEnd && ackedBytes > 0)
    {
        const double fraction =
            m_alphaAckedBytes > 0 ? double (m_alphaMarkedBytes) / double (m_alphaAckedBytes) : 0.0;
        m_alpha = (1.0 - m_config.dctcpG) * m_alpha + m_config.dctcpG * fraction;
        m_alphaWindowEnd = m_sndNxt;
        m_alphaAckedBytes = 0;
        m_alphaMarkedBytes = 0;
    }
}

void
TcpLeanSender::SampleRtt (Time rtt)
{
    // RFC 6298 §2.2-2.4 (α = 1/8, β = 1/4); RTO = max(MinRto, SRTT + max(G, 4 RTTVAR)).
    if (!m_rttSampled)
    {
        m_srtt = rtt;
        m_rttvar = rtt / 2;
        m_rttSampled = true;
    }
    else
    {
        const Time err = m_srtt > rtt ? m_srtt - rtt : rtt - m_srtt;
        m_rttvar = (m_rttvar * 3 + err) / 4;
        m_srtt = (m_srtt * 7 + rtt) / 8;
    }
    m_rto = std::max (m_config.minRto,
                      m_srtt + std::max (m_config.clockGranularity, m_rttvar * 4));
}

void
TcpLeanSender::RestartRto (Time now)
{
    if (m_sndUna >= m_sndNxt && (!m_config.ns3DctcpEce || m_sndUna >= m_nSegments))
    {
        // RFC 6298 §5.2: nothing outstanding.  ns-3 cancels its timer only when the send
        // buffer is empty (TcpSocketBase::ReceivedAck), so a window below one segment with
        // nothing in flight (Ns3DctcpEce: ssthresh has no floor) waits one RTO, as there.
        m_rtoDeadline = Time::Max ();
        return;
    }
    const Time rto = m_rto * m_backoff;
    m_rtoDeadline = now + rto;
    if (m_rtoEventPending && m_rtoEventAt > m_rtoDeadline)
    {
        m_rtoEvent.Cancel (); // the RTO shrank (first sample below InitialRto)
        m_rtoEventPending = false;
    }
    if (!m_rtoEventPending)
    {
        ScheduleRtoEvent (now, rto);
    }
}

void
TcpLeanSender::ScheduleRtoEvent (Time now, Time delay)
{
    // One pending timer event at most: restarting the timer only moves m_rtoDeadline, and
    // an early event re-schedules itself (as pFabric's sender does).
    m_rtoEventPending = true;
    m_rtoEventAt = now + delay;
    using RtoEvent = PooledTimedEvent<TcpLeanSender, &TcpLeanSender::OnRtoEvent>;
    m_rtoEvent =
        Simulator::Schedule (delay, Ptr<EventImpl> (new RtoEvent (this, now + delay), false));
}

void
TcpLeanSender::OnRtoEvent (Time now)
{
    m_rtoEventPending = false;
    if (m_rtoDeadline == Time::Max ())
    {
        return;
    }
    if (now < m_rtoDeadline)
    {
        ScheduleRtoEvent (now, m_rtoDeadline - now);
        return;
    }
    m_rtoDeadline = Time::Max ();
    OnRto (now);
}

void
TcpLeanSender::OnRto (Time now)
{
    ++m_timeouts;
    NS_LOG_LOGIC ("flow " << m_flowId << " RTO " << m_rto * m_backoff << " at una " << m_sndUna);
    // RFC 5681 §3.1 eq. (4), once per loss (not again when the retransmission times out).
    if (m_backoff == 1)
    {
        // ns-3.37 ReTxTimeout: BytesInFlight () before the timeout (Ns3PipeSsthresh, NewReno).
        const uint32_t halved =
            m_config.ns3PipeSsthresh && m_config.growth == TcpLeanGrowth::NEW_RENO ? Pipe ()
                                                                                  : FlightSize ();
        m_ssthresh = std::max (halved / 2, 2 * m_config.mssBytes);
    }
    m_cwnd = m_config.mssBytes;
    m_cwndCount = 0;
    // RFC 6675 §5.1: RecoveryPoint = HighData, recovery ends; every unSACKed segment below it
    // is resent in slow start (SACK information is kept, as ns-3 and Linux do).
    m_inRecovery = false;
    m_inCwr = false;
    m_afterRto = true;
    m_recoveryPoint = m_sndNxt;
    m_highRxt = m_sndUna;
    m_dupAcks = 0;
    for (uint32_t s = m_sndUna; s < m_sndNxt; ++s)
    {
        m_flags[s] &= static_cast<uint8_t> (~RETRANSMITTED);
    }
    m_retxOutstanding = 0;
    m_backoff = std::min<uint32_t> (m_backoff * 2, 1U << 16); // RFC 6298 §5.5
    SendPending (now);
    if (m_rtoDeadline == Time::Max ())
    {
        RestartRto (now);
    }
}

} // namespace ns3
