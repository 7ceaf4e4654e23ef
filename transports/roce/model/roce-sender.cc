/*
 * disaggsim: the sending side of a RoCE RC queue pair.
 */
#include "roce-sender.h"

#include "roce-header.h"
#include "roce-host.h"

#include "topologies/model/fabric-net-device.h"
#include "topologies/model/int-tag.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("RoceSender");
NS_OBJECT_ENSURE_REGISTERED (RoceSender);

TypeId
RoceSender::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::RoceSender")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<RoceSender> ()
            .AddAttribute ("Rto",
                           "Retransmission timeout: go-back-N from the oldest unacknowledged "
                           "byte when no ACK moved it for this long.  0 (default) = derived "
                           "from the fabric (RoceFlowTransport::ConfigureFabric): lossless, "
                           "InfiniBand's Local ACK Timeout 4.096 us x 2^14 = 67.1 ms (IBA "
                           "§9.7.6.1.3; 14 is perftest's default), since PFC never drops and a "
                           "short timeout fires on pauses (a spurious go-back-N); lossy, "
                           "320 us (IRN's RTO_high, Mittal et al. SIGCOMM'18 §4.1).  HPCC's "
                           "simulator has none",
                           TimeValue (Time (0)), MakeTimeAccessor (&RoceSender::m_rto),
                           MakeTimeChecker (Time (0)))
            .AddTraceSource ("FlowAcked", "The last byte was acknowledged: (flow id, time)",
                             MakeTraceSourceAccessor (&RoceSender::m_flowAcked),
                             "ns3::RoceSender::FlowAckedCallback");
    return tid;
}

RoceSender::RoceSender () = default;

RoceSender::~RoceSender () = default;

void
RoceSender::DoDispose ()
{
    m_rtoEvent.Cancel ();
    m_rtoPending = false;
    if (m_cc)
    {
        m_cc->Dispose ();
    }
    m_cc = nullptr;
    m_host = nullptr;
    Object::DoDispose ();
}

void
RoceSender::Setup (Ptr<RoceHost> host, uint64_t flowId, uint16_t dstHost, uint64_t sizeBytes,
                   uint32_t mssBytes, Ptr<RoceCongestionControl> cc, uint64_t lineRateBps,
                   Time baseRtt, uint64_t minWindowBytes)
{
    m_host = host;
    m_flowId = flowId;
    m_dstHost = dstHost;
    m_sizeBytes = sizeBytes;
    m_mssBytes = mssBytes;
    m_cc = cc;
    m_lineRateBps = lineRateBps;
    m_baseRtt = baseRtt;
    m_minWindowBytes = minWindowBytes;
    m_ecn = cc->UsesEcn ();
    m_int = cc->UsesInt ();
}

void
RoceSender::Start ()
{
    const Time now = Simulator::Now ();
    m_nextAvail = now;
    m_cc->Start (this, m_lineRateBps, m_baseRtt, now);
    m_host->Activate (this);
}

void
RoceSender::SetRateBps (uint64_t bitRate)
{
    m_rateBps = std::clamp<uint64_t> (bitRate, 1, m_lineRateBps);
}

void
RoceSender::SetWindowBytes (uint64_t bytes)
{
    const bool opened = bytes > m_windowBytes;
    m_windowBytes = std::max (bytes, m_minWindowBytes);
    if (opened && m_host)
    {
        m_host->Activate (this);
    }
}

void
RoceSender::SendNext (Time now)
{
    Ptr<Packet> packet;
    FabricHeader frame;
    BuildNext (now, packet, frame);
    m_host->SendFrame (std::move (packet), frame, now);
}

void
RoceSender::BuildNext (Time now, Ptr<Packet>& packet, FabricHeader& frame)
{
    const auto payload =
        static_cast<uint32_t> (std::min<uint64_t> (m_mssBytes, m_sizeBytes - m_sndNxt));
    const uint32_t headerBytes = kRoceDataHeaderBytes + (m_int ? kIntHeaderBytes : 0);
    frame = FabricHeader ();
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_dstHost;
    frame.protocol = kRoceProtocol;
    frame.ecn = m_ecn ? FabricEcn::ECT0 : FabricEcn::NOT_ECT;
    frame.transportFlags = ROCE_DATA;
    frame.flowHash = static_cast<uint32_t> (m_flowId * 0x9E3779B97F4A7C15ULL >> 32);
    frame.payloadBytes = payload;
    frame.intRequested = m_int ? 1 : 0;
    frame.flowId = m_flowId;
    frame.seq = static_cast<uint32_t> (m_sndNxt);
    if (m_int)
    {
        frame.sackSeq = IntRecords::Open (); // the key of its INT records (IntFrameKey)
    }
    if (m_sndNxt < m_highestSent)
    {
        ++m_retransmitted;
    }
    const bool nothingInFlight = m_sndNxt == m_sndUna;
    m_sndNxt += payload;
    m_highestSent = std::max (m_highestSent, m_sndNxt);
    ++m_dataPacketsSent;
    const uint32_t wireBytes = payload + headerBytes + kFabricHeaderBytes;
    // The pacer: the next packet may go one serialization time at the QP's rate later.  At
    // line rate the NIC's own serialization is the pacer (it cannot send faster): the next
    // packet may be handed over at once and waits for this one at the port.
    m_nextAvail = m_rateBps >= m_lineRateBps
                      ? now
                      : now + FabricNetDevice::TxTimeFor (wireBytes, m_rateBps);
    if (nothingInFlight || !m_rtoPending)
    {
        RestartRto (now); // the timer covers the oldest byte in flight
    }
    m_cc->OnDataSent (wireBytes, now);
    packet = m_host->FramePacket (payload + headerBytes);
}

void
RoceSender::ReceiveAck (uint64_t ackSeq, bool nack, const IntTag* records, Time now)
{
    if (m_done)
    {
        return;
    }
    if (ackSeq > m_sndUna)
    {
        m_sndUna = std::min (ackSeq, m_sizeBytes);
        if (m_sndNxt < m_sndUna)
        {
            m_sndNxt = m_sndUna; // a NACK's go-back may sit below a later cumulative ACK
        }
        RestartRto (now);
    }
    m_cc->OnAck (ackSeq, records, now);
    if (m_sndUna >= m_sizeBytes)
    {
        m_done = true;
        m_rtoEvent.Cancel ();
        m_rtoPending = false;
        m_cc->Stop ();
        m_flowAcked (m_flowId, now);
        return;
    }
    if (nack)
    {
        ++m_nacks;
        GoBack ();
    }
    m_host->Activate (this);
}

void
RoceSender::ReceiveCnp (Time now)
{
    if (!m_done)
    {
        m_cc->OnCnp (now);
    }
}

void
RoceSender::GoBack ()
{
    m_sndNxt = m_sndUna;
}

void
RoceSender::RestartRto (Time now)
{
    // Lazy: every ACK moves the deadline, but an event is scheduled only when none is
    // pending; one that fires early re-arms for the rest (one event per RTO, not per ACK).
    m_rtoDeadline = now + m_rto;
    if (!m_rtoPending)
    {
        m_rtoPending = true;
        m_rtoEvent = Simulator::Schedule (m_rto, &RoceSender::RtoExpired, this);
    }
}

void
RoceSender::RtoExpired ()
{
    const Time now = Simulator::Now ();
    m_rtoPending = false; // this event ran
    if (m_done || m_sndUna >= m_sndNxt)
    {
        return;
    }
    if (now < m_rtoDeadline)
    {
        m_rtoPending = true;
        m_rtoEvent = Simulator::Schedule (m_rtoDeadline - now, &RoceSender::RtoExpired, this);
        return;
    }
    ++m_timeouts;
    GoBack ();
    RestartRto (now);
    m_host->Activate (this);
}

} // namespace ns3
