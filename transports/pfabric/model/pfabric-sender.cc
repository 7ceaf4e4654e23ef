/*
 * disaggsim: pFabric end-host sender: line-rate start, window, fixed RTO, probe mode.
 */
#include "pfabric-sender.h"

#include "pfabric-host.h"
#include "pfabric-queue.h"
#include "topologies/model/pooled-event.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfabricSender");
NS_OBJECT_ENSURE_REGISTERED (PfabricSender);

TypeId
PfabricSender::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PfabricSender")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PfabricSender> ()
            .AddAttribute ("MssBytes", "Payload bytes per data packet (YAPS params.mss = 1460)",
                           UintegerValue (1460), MakeUintegerAccessor (&PfabricSender::m_mssBytes),
                           MakeUintegerChecker<uint32_t> (1, 9000))
            .AddAttribute ("InitialCwnd",
                           "Initial window in packets, ~BDP: 12 at 10 Gbps (pFabric SIGCOMM'13 "
                           "§5.1; YAPS init_cwnd 12).  0 = derived by PfabricFlowTransport from "
                           "the topology's BDP (doc/pfabric.md §6)",
                           UintegerValue (0), MakeUintegerAccessor (&PfabricSender::m_initialCwnd),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("MaxCwnd",
                           "Window cap in packets (YAPS max_cwnd 15 = init_cwnd 12 + 3).  0 = "
                           "InitialCwnd + 3",
                           UintegerValue (0), MakeUintegerAccessor (&PfabricSender::m_maxCwnd),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("InitialSsthresh",
                           "Initial slow-start threshold in packets (YAPS PFabricFlow: 100000, "
                           "i.e. slow start until MaxCwnd)",
                           UintegerValue (100000),
                           MakeUintegerAccessor (&PfabricSender::m_initialSsthresh),
                           MakeUintegerChecker<uint32_t> (2))
            .AddAttribute ("Rto",
                           "Fixed retransmission timeout, ~3 RTT: 45 us at 10 Gbps (pFabric "
                           "SIGCOMM'13 §5.1; YAPS retx_timeout 45e-06).  0 = derived: "
                           "max(3 x the topology's base RTT, MinRto) (PfabricFlowTransport, "
                           "doc/pfabric.md §6)",
                           TimeValue (Time (0)), MakeTimeAccessor (&PfabricSender::m_rto),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("MinRto",
                           "Floor of the derived timeout (used when Rto = 0): the paper's 45 us "
                           "(pFabric SIGCOMM'13 §5.1), which the authors' simulator also keeps "
                           "at 40 Gbps (YAPS py/run_experiments.py).  A packet can wait behind "
                           "higher-priority ones for longer than any buffer drain time, so a "
                           "timeout scaled down with the link rate fires on packets that are "
                           "only waiting (doc/pfabric.md §6).  0 = no floor (3 x RTT)",
                           TimeValue (MicroSeconds (45)),
                           MakeTimeAccessor (&PfabricSender::m_minRto), MakeTimeChecker (Time (0)))
            .AddAttribute ("DeferRtoWhileQueued",
                           "At the retransmission timeout, if a data packet of the flow still "
                           "waits in the sender's own NIC queue, restart the timer instead of "
                           "retransmitting (a real host does not time out data it has not "
                           "transmitted: Linux tcp_output.c skb_still_in_host_queue). false = "
                           "YAPS (timer from the moment the packet is queued at the NIC)",
                           BooleanValue (true),
                           MakeBooleanAccessor (&PfabricSender::m_deferRtoWhileQueued),
                           MakeBooleanChecker ())
            .AddAttribute ("ProbeAfterTimeouts",
                           "Consecutive timeouts after which the flow enters probe mode "
                           "(pFabric SIGCOMM'13 §4.3: 5); 0 = never (YAPS)",
                           UintegerValue (5),
                           MakeUintegerAccessor (&PfabricSender::m_probeAfterTimeouts),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("PacketSpraying",
                           "Spread a flow's packets over the ECMP paths packet by packet (YAPS "
                           "load_balancing 0); false = one path per flow",
                           BooleanValue (true), MakeBooleanAccessor (&PfabricSender::m_spray),
                           MakeBooleanChecker ())
            .AddTraceSource ("FlowAcked",
                             "The flow's last byte was acknowledged: (flow id, start, time)",
                             MakeTraceSourceAccessor (&PfabricSender::m_flowAcked),
                             "ns3::PfabricSender::FlowAckedCallback");
    return tid;
}

PfabricSender::PfabricSender () = default;

PfabricSender::PfabricSender (const PfabricSender& prototype)
      : Object (prototype)
      , m_rto (prototype.m_rto)
      , m_deferRtoWhileQueued (prototype.m_deferRtoWhileQueued)
      , m_spray (prototype.m_spray)
      , m_mssBytes (prototype.m_mssBytes)
      , m_maxCwnd (prototype.m_maxCwnd)
      , m_probeAfterTimeouts (prototype.m_probeAfterTimeouts)
      , m_initialCwnd (prototype.m_initialCwnd)
      , m_initialSsthresh (prototype.m_initialSsthresh)
      , m_minRto (prototype.m_minRto)
      , m_flowAcked (prototype.m_flowAcked)
{
}

void
PfabricSender::SetWindowAndRto (uint32_t initialCwnd, uint32_t maxCwnd, Time rto)
{
    NS_ABORT_MSG_IF (initialCwnd == 0 || maxCwnd == 0 || rto.IsZero (),
                     "PfabricSender: window and RTO must be > 0");
    m_initialCwnd = initialCwnd;
    m_maxCwnd = maxCwnd;
    m_rto = rto;
}

PfabricSender::~PfabricSender () = default;

void
PfabricSender::ScheduleRtoEvent (Time now, Time delay)
{
    m_rtoEventPending = true;
    using RtoEvent = PooledTimedEvent<PfabricSender, &PfabricSender::OnRtoEvent>;
    m_rtoEvent =
        Simulator::Schedule (delay, Ptr<EventImpl> (new RtoEvent (this, now + delay), false));
}

void
PfabricSender::DoDispose ()
{
    m_rtoEvent.Cancel ();
    m_rtoEventPending = false;
    m_host = nullptr;
    Object::DoDispose ();
}

void
PfabricSender::Setup (Ptr<PfabricHost> host, uint64_t flowId, uint16_t dstHost, uint64_t sizeBytes)
{
    NS_ABORT_MSG_IF (sizeBytes == 0, "PfabricSender: flow " << flowId << " has size 0");
    NS_ABORT_MSG_IF (sizeBytes >= (uint64_t (1) << 32),
                     "PfabricSender: flow " << flowId << " size " << sizeBytes
                                            << " B does not fit the 32-bit sequence space");
    NS_ABORT_MSG_IF (m_initialCwnd == 0 || m_maxCwnd == 0 || m_rto.IsZero (),
                     "PfabricSender: InitialCwnd, MaxCwnd and Rto must be resolved (> 0) "
                     "before Setup; PfabricFlowTransport does it");
    m_host = host;
    m_flowId = flowId;
    m_dstHost = dstHost;
    m_sizeBytes = sizeBytes;
    m_nPackets = static_cast<uint32_t> ((sizeBytes + m_mssBytes - 1) / m_mssBytes);
    m_sacked.Reset (m_nPackets);
    m_cwnd = std::min (m_initialCwnd, m_maxCwnd);
    m_ssthresh = m_initialSsthresh;
}

uint32_t
PfabricSender::PayloadOf (uint32_t packetIndex) const
{
    uint64_t offset = uint64_t (packetIndex) * m_mssBytes;
    return static_cast<uint32_t> (std::min<uint64_t> (m_mssBytes, m_sizeBytes - offset));
}

uint32_t
PfabricSender::Remaining () const
{
    uint64_t acked = std::min<uint64_t> (uint64_t (m_cumAckPacket) * m_mssBytes, m_sizeBytes);
    uint64_t sacked = uint64_t (m_sackedAbove) * m_mssBytes;
    uint32_t last = m_nPackets - 1;
    if (m_sacked[last] && last >= m_cumAckPacket)
    {
        sacked -= m_mssBytes - PayloadOf (last);
    }
    return static_cast<uint32_t> (m_sizeBytes - acked - sacked);
}

void
PfabricSender::Start ()
{
    m_start = Simulator::Now ();
    NS_LOG_FUNCTION (this << m_flowId << m_sizeBytes);
    SendPending (m_start);
}

void
PfabricSender::SendPending (Time now)
{
    if (m_finished || m_probing)
    {
        return;
    }
    uint64_t limit = uint64_t (m_cumAckPacket) + m_cwnd + m_sackedAbove;
    while (m_nextPacket < m_nPackets && m_nextPacket + 1 <= limit)
    {
        if (!m_sacked[m_nextPacket])
        {
            SendData (m_nextPacket, now);
        }
        ++m_nextPacket;
        if (!IsRtoArmed ())
        {
            ArmRto (now);
        }
    }
}

void
PfabricSender::SendData (uint32_t packetIndex, Time now)
{
    ++m_dataPacketsSent;
    SendFrame (PayloadOf (packetIndex), packetIndex, PFABRIC_DATA, now);
}

void
PfabricSender::SendProbe (Time now)
{
    // A minimum-size packet with a one-byte payload (SIGCOMM'13 §4.3).
    SendFrame (1, m_cumAckPacket, PFABRIC_PROBE, now);
}

void
PfabricSender::SendFrame (uint32_t payloadBytes, uint32_t packetIndex, uint8_t flags, Time now)
{
    FabricHeader frame;
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_dstHost;
    frame.protocol = kPfabricProtocol;
    frame.flowHash = PfabricFlowHash (m_flowId, packetIndex, m_spray);
    frame.rank = Remaining (); // priority = remaining flow size (SIGCOMM'13 §4.1)
    frame.payloadBytes = flags == PFABRIC_PROBE ? 0 : payloadBytes;
    // the pFabric header, carried in the frame (pfabric-header.h)
    frame.transportFlags = flags;
    frame.flowId = m_flowId;
    frame.seq = packetIndex * m_mssBytes;
    // In an incast most frames are refused by our own full NIC queue: ask before building.
    if (m_host->DropsAtNic (frame, payloadBytes + kPfabricHeaderBytes))
    {
        return;
    }
    // The payload and the pFabric header's bytes (their fields are in the frame).
    Ptr<Packet> packet = Create<Packet> (payloadBytes + kPfabricHeaderBytes);
    m_host->Send (packet, frame, now);
}

void
PfabricSender::ArmRto (Time now)
{
    if (m_cumAckPacket >= m_nPackets)
    {
        return;
    }
    m_rtoDeadline = now + m_rto;
    if (!m_rtoEventPending)
    {
        ScheduleRtoEvent (now, m_rto);
    }
}

void
PfabricSender::DisarmRto ()
{
    m_rtoDeadline = Time::Max ();
}

void
PfabricSender::OnRtoEvent (Time now)
{
    m_rtoEventPending = false; // this event has fired
    if (!IsRtoArmed ())
    {
        return;
    }
    if (now < m_rtoDeadline)
    {
        ScheduleRtoEvent (now, m_rtoDeadline - now);
        return;
    }
    if (m_deferRtoWhileQueued && m_host->NicHoldsFlow (m_flowId))
    {
        // A packet of this flow has not even left our own NIC: nothing is lost yet, the
        // host is busy (Linux tcp_output.c skb_still_in_host_queue).  Restart the timer.
        ++m_deferredTimeouts;
        m_rtoDeadline = now + m_rto;
        ScheduleRtoEvent (now, m_rto);
        return;
    }
    DisarmRto ();
    OnRto (now);
}

void
PfabricSender::OnRto (Time now)
{
    ++m_timeouts;
    ++m_consecutiveTimeouts;
    NS_LOG_LOGIC ("flow " << m_flowId << " timeout " << m_consecutiveTimeouts << " cwnd "
                          << m_cwnd);
    m_ssthresh = std::max<uint32_t> (m_cwnd / 2, 2);
    m_cwnd = 1;
    m_nextPacket = m_cumAckPacket;
    if (m_probeAfterTimeouts != 0 && m_consecutiveTimeouts >= m_probeAfterTimeouts)
    {
        m_probing = true;
        SendProbe (now);
    }
    else
    {
        SendPending (now);
    }
    if (!IsRtoArmed ())
    {
        ArmRto (now);
    }
}

void
PfabricSender::IncreaseCwnd ()
{
    if (m_cwnd < m_ssthresh)
    {
        m_cwnd += 1;
    }
    else if (++m_ackCount >= m_cwnd)
    {
        m_ackCount = 0;
        m_cwnd += 1;
    }
    m_cwnd = std::min (m_cwnd, m_maxCwnd);
}

void
PfabricSender::ReceiveAck (uint32_t ackSeq, uint32_t sackSeq, bool probe, Time now)
{
    if (m_finished)
    {
        return;
    }
    uint32_t ackPacket =
        ackSeq >= m_sizeBytes ? m_nPackets : static_cast<uint32_t> (ackSeq / m_mssBytes);
    uint32_t sackPacket = sackSeq / m_mssBytes;
    if (!probe && sackPacket >= ackPacket && sackPacket < m_nPackets && !m_sacked[sackPacket])
    {
        m_sacked.Set (sackPacket);
        if (sackPacket >= m_cumAckPacket)
        {
            ++m_sackedAbove;
        }
    }
    if (m_nextPacket < ackPacket)
    {
        m_nextPacket = ackPacket;
    }
    bool advanced = ackPacket > m_cumAckPacket;
    if (advanced)
    {
        for (uint32_t i = m_cumAckPacket; i < ackPacket; ++i)
        {
            if (m_sacked[i])
            {
                --m_sackedAbove;
            }
        }
        m_cumAckPacket = ackPacket;
        if (m_cumAckPacket == m_nPackets)
        {
            m_finished = true;
            DisarmRto ();
            m_rtoEvent.Cancel ();
            m_rtoEventPending = false;
            NS_LOG_LOGIC ("flow " << m_flowId << " acked");
            m_flowAcked (m_flowId, m_start, now);
            return;
        }
        IncreaseCwnd ();
    }
    if (advanced || (probe && m_probing))
    {
        m_consecutiveTimeouts = 0;
        m_probing = false;
        SendPending (now);
        DisarmRto ();
        ArmRto (now);
    }
}

} // namespace ns3
