/*
 * disaggsim: a port of a fabric node (host NIC or switch port).
 */
#include "fabric-net-device.h"

#include "fabric-channel.h"
#include "int-tag.h"
#include "pfc-header.h"
#include "pooled-event.h"

#include "ns3/ipv4-header.h"
#include "ns3/ipv4-l3-protocol.h"
#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/pointer.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FabricNetDevice");
NS_OBJECT_ENSURE_REGISTERED (FabricNetDevice);

namespace
{
constexpr uint16_t kIpv4Protocol = 0x0800;
constexpr uint8_t kTcpProtocol = 6;
constexpr uint8_t kUdpProtocol = 17;
constexpr uint32_t kUdpHeaderBytes = 8;
} // namespace

TypeId
FabricNetDevice::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FabricNetDevice")
            .SetParent<NetDevice> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FabricNetDevice> ()
            .AddAttribute (
                "DataRate", "Line rate of the port", DataRateValue (DataRate ("40Gbps")),
                MakeDataRateAccessor (&FabricNetDevice::SetDataRate, &FabricNetDevice::GetDataRate),
                MakeDataRateChecker ())
            .AddAttribute (
                "Mtu", "Largest IP packet in bytes (Ethernet's 1500 B)", UintegerValue (1500),
                MakeUintegerAccessor (&FabricNetDevice::SetMtu, &FabricNetDevice::GetMtu),
                MakeUintegerChecker<uint16_t> ())
            .AddAttribute ("TxQueue", "The egress queue", PointerValue (),
                           MakePointerAccessor (&FabricNetDevice::m_queue),
                           MakePointerChecker<FabricQueue> ())
            .AddAttribute ("SendOverhead",
                           "Upper bound J of a uniform random delay U[0, J] before a frame handed "
                           "down by this port's host (Send, SendFabric) may start; FIFO order is "
                           "kept.  The random source processing time of Floyd & Jacobson 1992 "
                           "(\"On traffic phase effects in packet-switched gateways\"; ns-2 "
                           "Agent/TCP overhead_) that removes phase effects; about one bottleneck "
                           "service time (1518 B at 40 Gbps: 303.6 ns).  0 = deterministic",
                           TimeValue (Time (0)),
                           MakeTimeAccessor (&FabricNetDevice::m_sendOverhead),
                           MakeTimeChecker (Time (0)))
            .AddTraceSource ("Tx", "A frame started transmission",
                             MakeTraceSourceAccessor (&FabricNetDevice::m_txTrace),
                             "ns3::FabricNetDevice::FrameTracedCallback")
            .AddTraceSource ("Rx", "A frame was received",
                             MakeTraceSourceAccessor (&FabricNetDevice::m_rxTrace),
                             "ns3::FabricNetDevice::FrameTracedCallback")
            .AddTraceSource ("PfcTx", "A PFC frame was put on the wire (classes, quanta)",
                             MakeTraceSourceAccessor (&FabricNetDevice::m_pfcTxTrace),
                             "ns3::FabricNetDevice::PfcTracedCallback")
            .AddTraceSource ("PfcRx",
                             "A PFC frame was received: classes, quanta (0 = resume)",
                             MakeTraceSourceAccessor (&FabricNetDevice::m_pfcRxTrace),
                             "ns3::FabricNetDevice::PfcTracedCallback");
    return tid;
}

FabricNetDevice::FabricNetDevice ()
      : m_address (Mac48Address::Allocate ())
{
}

FabricNetDevice::~FabricNetDevice () = default;

void
FabricNetDevice::DoDispose ()
{
    m_node = nullptr;
    m_channel = nullptr;
    m_queue = nullptr;
    m_overheadRandom = nullptr;
    m_rxCallback.Nullify ();
    m_promiscCallback.Nullify ();
    m_fabricRxCallback.Nullify ();
    m_frameSink = nullptr;
    if (m_pfc)
    {
        for (EventId& timer : m_pfc->expiry)
        {
            timer.Cancel ();
        }
        m_pfc.reset ();
    }
    NetDevice::DoDispose ();
}

Time
FabricNetDevice::TxTimeFor (uint64_t wireBytes, uint64_t bitRate)
{
    NS_ABORT_MSG_IF (bitRate == 0, "FabricNetDevice: DataRate is zero");
    const uint64_t psPerSecond = 1000000000000ULL;
    uint64_t bits = wireBytes * 8;
    // bits * 1e12 overflows 64 bits above ~2.3 MB frames; frames are <= 64 KB.
    uint64_t ps = (bits * psPerSecond + bitRate - 1) / bitRate;
    return PicoSeconds (static_cast<int64_t> (ps));
}

void
FabricNetDevice::Attach (Ptr<FabricChannel> channel)
{
    m_channel = channel;
    channel->Attach (this);
}

void
FabricNetDevice::SetQueue (Ptr<FabricQueue> queue)
{
    m_queue = queue;
}

Ptr<FabricQueue>
FabricNetDevice::GetQueue () const
{
    return m_queue;
}

DataRate
FabricNetDevice::GetDataRate () const
{
    return m_dataRate;
}

void
FabricNetDevice::SetDataRate (DataRate rate)
{
    m_dataRate = rate;
    m_bitRate = rate.GetBitRate ();
    m_txCacheBytes[0] = m_txCacheBytes[1] = UINT64_MAX;
}

void
FabricNetDevice::SetCutThrough (Time switchingDelay)
{
    m_cutThrough = true;
    m_cutThroughDelay = switchingDelay;
}

void
FabricNetDevice::SetFabricReceiveCallback (FabricReceiveCallback callback)
{
    m_fabricRxCallback = callback;
}

bool
FabricNetDevice::SendFabric (const Ptr<Packet>& packet, const FabricHeader& header)
{
    return SendFabric (packet, header, Simulator::Now ());
}

bool
FabricNetDevice::SendFabric (const Ptr<Packet>& packet, const FabricHeader& header, Time now)
{
    return EnqueueFrame (packet, header, HostFrameNotBefore (now), now);
}

bool
FabricNetDevice::DropRefusedFabricFrame (const FabricHeader& header, uint32_t wireBytes)
{
    NS_ASSERT_MSG (m_queue, "FabricNetDevice: no egress queue");
    // A refused frame never passes through an idle port: a full queue is not empty, and a
    // frame larger than the whole buffer fails PassThrough as well.
    if (!m_queue->DropIfRefused (header, wireBytes))
    {
        return false;
    }
    HostFrameNotBefore (); // SendFabric draws before enqueueing: keep the random stream
    return true;
}

Time
FabricNetDevice::HostFrameNotBefore ()
{
    return m_sendOverhead.IsZero () ? Time (0) : HostFrameNotBefore (Simulator::Now ());
}

Time
FabricNetDevice::HostFrameNotBefore (Time now)
{
    if (m_sendOverhead.IsZero ())
    {
        return Time (0);
    }
    // Created at the first draw, so that runs without overhead consume no random stream and
    // every other random variable keeps its stream number.
    if (!m_overheadRandom)
    {
        m_overheadRandom = CreateObject<UniformRandomVariable> ();
    }
    return now + Time (m_overheadRandom->GetValue (0.0, m_sendOverhead.GetDouble ()));
}

bool
FabricNetDevice::EnqueueFrame (const Ptr<Packet>& packet, const FabricHeader& header,
                               Time notBefore)
{
    return EnqueueFrame (packet, header, notBefore, Simulator::Now ());
}

bool
FabricNetDevice::EnqueueFrame (const Ptr<Packet>& packet, const FabricHeader& header,
                               Time notBefore, Time now, uint32_t ingressPort)
{
    return EnqueueFrame (FabricQueueItem (packet, header, notBefore, ingressPort), now);
}

bool
FabricNetDevice::EnqueueFrame (FabricQueueItem&& item, Time now)
{
    NS_ASSERT_MSG (m_queue, "FabricNetDevice: no egress queue");
    // (An idle port has no control frame waiting: it would have sent it.)
    if (!m_txCompletePending && m_pausedClasses == 0 && m_queue->IsEmpty () &&
        now >= m_busyUntil && m_queue->PassThrough (item))
    {
        // Idle port, empty queue: the frame leaves now, as Enqueue + StartTransmission would
        // send it, without being stored.
        Transmit (item, now);
        return true;
    }
    if (!m_queue->Enqueue (std::move (item), now))
    {
        return false;
    }
    // RestartIfIdle, written out: this is every frame's path (calling it, even inline from
    // the header, costs +0.5 % instructions on pFabric's incast: bench/RESULTS.md).
    if (!m_txCompletePending)
    {
        if (now >= m_busyUntil)
        {
            StartTransmission (now);
        }
        else
        {
            m_txCompletePending = true;
            ScheduleTransmitComplete (now, m_busyUntil - now);
        }
    }
    return true;
}

void
FabricNetDevice::RestartIfIdle (Time now)
{
    if (!m_txCompletePending)
    {
        if (now >= m_busyUntil)
        {
            StartTransmission (now);
        }
        else
        {
            m_txCompletePending = true;
            ScheduleTransmitComplete (now, m_busyUntil - now);
        }
    }
}

void
FabricNetDevice::StartTransmission (Time now)
{
    if (m_controlPending || m_pausedClasses != 0)
    {
        StartTransmissionSlow (now);
        return;
    }
    FabricQueueItem item;
    if (!m_queue->Dequeue (item, now))
    {
        return;
    }
    Transmit (item, now);
}

void
FabricNetDevice::StartTransmissionSlow (Time now)
{
    if (m_controlPending)
    {
        TransmitControlFrame (now);
        return;
    }
    FabricQueueItem item;
    // A queue whose every waiting frame is of a paused class sends nothing: the port stays
    // idle until Resume (or a new frame of an unpaused class) restarts it.
    if (!m_queue->Dequeue (item, now, m_pausedClasses))
    {
        return;
    }
    Transmit (item, now);
}

void
FabricNetDevice::TransmitControlFrame (Time now)
{
    const PfcState::ControlFrame frame = m_pfc->control.front ();
    m_pfc->control.pop_front ();
    m_controlPending = !m_pfc->control.empty ();
    const Time txTime = TxTime (kPfcFrameBytes);
    m_busyUntil = now + txTime;
    ++m_txPackets;
    m_pfcTxTrace (frame.classEnable, frame.quanta);
    m_channel->TransmitPfc (this, frame.classEnable, frame.quanta, txTime);
    if (!m_queue->IsEmpty () || m_controlPending)
    {
        m_txCompletePending = true;
        ScheduleTransmitComplete (now, txTime);
    }
}

void
FabricNetDevice::Transmit (FabricQueueItem& item, Time now)
{
    Time start = item.notBefore > now ? item.notBefore : now;
    const uint32_t wireBytes = item.wireBytes;
    Time txTime = TxTime (wireBytes);
    m_busyUntil = start + txTime;
    ++m_txPackets;
    if (item.header.intRequested != 0 && m_switchPortIndex != kFabricNoIngressPort)
    {
        StampInt (item.header, start);
    }
    m_txBytes += wireBytes;
    if (!m_txTrace.IsEmpty ())
    {
        m_txTrace (item.packet, item.header);
    }
    m_channel->Transmit (this, item.packet, item.header, start - now, txTime, now, wireBytes);
    // Only a port with frames waiting needs a completion event; an idle port is restarted
    // by the next EnqueueFrame (one event saved per frame on uncongested ports).
    if (!m_queue->IsEmpty () || HasControlFrame ())
    {
        m_txCompletePending = true;
        ScheduleTransmitComplete (now, m_busyUntil - now);
    }
}

void
FabricNetDevice::StampInt (const FabricHeader& header, Time start)
{
    // HPCC's simulator stamps at the switch's dequeue (switch-node.cc SwitchNotifyDequeue:
    // PushHop (now, m_txBytes before this packet, egress queue bytes after its dequeue,
    // line rate)); the same values here, at the frame's start on the wire.
    IntRecords::At (IntFrameKey (header))
        .PushHop (IntHop{static_cast<uint64_t> (start.GetNanoSeconds ()), m_txBytes,
                         m_queue->GetNBytes (), m_bitRate});
}

void
FabricNetDevice::ScheduleTransmitComplete (Time now, Time delay)
{
    // With this port's node as context, like a frame arrival: no EventId is made (nobody
    // cancels a completion), which saves a reference-count round trip per event.  ns-3 keys
    // the event at now + delay, the time it carries.
    Simulator::ScheduleWithContext (
        m_nodeId, delay,
        new PooledTimedEvent<FabricNetDevice, &FabricNetDevice::TransmitComplete> (this,
                                                                                   now + delay));
}

void
FabricNetDevice::TransmitComplete (Time now)
{
    m_txCompletePending = false;
    if (!m_queue->IsEmpty () || HasControlFrame ())
    {
        StartTransmission (now);
    }
}

FabricNetDevice::PfcState&
FabricNetDevice::Pfc ()
{
    if (!m_pfc)
    {
        m_pfc = std::make_unique<PfcState> ();
    }
    return *m_pfc;
}

void
FabricNetDevice::Pause (uint8_t trafficClass)
{
    Pause (trafficClass, Simulator::Now ());
}

namespace
{
/// \returns the bit of \p trafficClass in a class set; aborts naming \p caller if > 7.
uint8_t
ClassBit (uint8_t trafficClass, const char* caller)
{
    NS_ABORT_MSG_IF (trafficClass >= kFabricTrafficClasses,
                     caller << ": no traffic class " << uint32_t (trafficClass));
    return static_cast<uint8_t> (1u << trafficClass);
}
} // namespace

void
FabricNetDevice::Pause (uint8_t trafficClass, Time now)
{
    const uint8_t bit = ClassBit (trafficClass, "FabricNetDevice::Pause");
    if ((m_pausedClasses & bit) == 0)
    {
        m_pausedClasses |= bit;
        Pfc ().pausedSince[trafficClass] = now;
    }
}

void
FabricNetDevice::Resume (uint8_t trafficClass)
{
    Resume (trafficClass, Simulator::Now ());
}

void
FabricNetDevice::Resume (uint8_t trafficClass, Time now)
{
    const uint8_t bit = ClassBit (trafficClass, "FabricNetDevice::Resume");
    if ((m_pausedClasses & bit) == 0)
    {
        return;
    }
    m_pausedClasses &= static_cast<uint8_t> (~bit);
    PfcState& pfc = Pfc ();
    pfc.pausedTotal[trafficClass] += now - pfc.pausedSince[trafficClass];
    pfc.expiry[trafficClass].Cancel ();
    if (!m_queue->IsEmpty ())
    {
        RestartIfIdle (now);
    }
}

void
FabricNetDevice::PauseExpired (uint8_t trafficClass)
{
    Resume (trafficClass, Simulator::Now ());
}

void
FabricNetDevice::SendPfc (uint8_t classEnable, uint16_t quanta)
{
    NS_ASSERT_MSG (m_channel, "FabricNetDevice::SendPfc: no cable");
    // The frame travels as what it says (its PfcHeader's fields: one pause time for every
    // class it enables), not as a serialized Packet, as a data frame travels as its
    // FabricHeader: no Packet is made, serialized and parsed per PFC frame.
    PfcState& state = Pfc ();
    state.control.push_back ({classEnable, quanta});
    m_controlPending = true;
    ++state.sent;
    RestartIfIdle (Simulator::Now ());
}

void
FabricNetDevice::ReceivePfc (uint8_t classEnable, uint16_t quanta, Time now)
{
    ++Pfc ().received;
    for (uint8_t c = 0; c < kFabricTrafficClasses; ++c)
    {
        if (((classEnable >> c) & 1) != 0)
        {
            ReceivePfcClass (c, quanta, now);
        }
    }
}

void
FabricNetDevice::ReceivePfcClass (uint8_t trafficClass, uint16_t quanta, Time now)
{
    m_pfcRxTrace (static_cast<uint8_t> (1u << trafficClass), quanta);
    if (quanta == 0)
    {
        Resume (trafficClass, now);
        return;
    }
    // Paused for quanta x 512 bit times at this port's rate; a new frame restarts it.
    Pause (trafficClass, now);
    EventId& timer = m_pfc->expiry[trafficClass];
    timer.Cancel ();
    const uint64_t pauseBytes = uint64_t (quanta) * kPfcBitsPerQuantum / 8;
    timer = Simulator::Schedule (TxTimeFor (pauseBytes, m_bitRate), &FabricNetDevice::PauseExpired,
                                 this, trafficClass);
}

uint64_t
FabricNetDevice::GetPfcFramesSent () const
{
    return m_pfc ? m_pfc->sent : 0;
}

uint64_t
FabricNetDevice::GetPfcFramesReceived () const
{
    return m_pfc ? m_pfc->received : 0;
}

Time
FabricNetDevice::GetPausedTime (uint8_t trafficClass) const
{
    if (!m_pfc || trafficClass >= kFabricTrafficClasses)
    {
        return Time (0);
    }
    Time total = m_pfc->pausedTotal[trafficClass];
    if ((m_pausedClasses >> trafficClass) & 1)
    {
        total += Simulator::Now () - m_pfc->pausedSince[trafficClass];
    }
    return total;
}

void
FabricNetDevice::Receive (const Ptr<Packet>& received, const FabricHeader& header, Time txTime)
{
    Receive (received, header, txTime, Simulator::Now ());
}

void
FabricNetDevice::Receive (const Ptr<Packet>& received, const FabricHeader& header, Time txTime,
                          Time now)
{
    Ptr<Packet> packet = received;
    Receive (packet, header, txTime, now, received->GetSize () + kFabricHeaderBytes);
}

void
FabricNetDevice::Receive (Ptr<Packet>& received, const FabricHeader& header, Time txTime,
                          Time now, uint32_t wireBytes)
{
    ++m_rxPackets;
    if (header.payloadBytes != 0)
    {
        ++m_rxDataPackets;
    }
    if (!m_rxTrace.IsEmpty ())
    {
        m_rxTrace (received, header);
    }
    if (m_frameSink != nullptr)
    {
        m_frameSink->ReceiveFrame (this, received, header, txTime, now, wireBytes);
        return;
    }
    if (!m_fabricRxCallback.IsNull ())
    {
        m_fabricRxCallback (this, received, header, txTime);
        return;
    }
    Ptr<Packet> packet = received; // the IPv4 CE path below replaces it by a copy
    if (m_rxCallback.IsNull ())
    {
        NS_LOG_WARN ("FabricNetDevice: frame dropped, no protocol handler on this host");
        return;
    }
    if (header.ecn == FabricEcn::CE && header.protocol == kIpv4Protocol)
    {
        // RFC 6040 §4.2: an outer CE on an ECN-capable inner header becomes inner CE.
        packet = packet->Copy ();
        Ipv4Header ipv4;
        packet->RemoveHeader (ipv4);
        if (ipv4.GetEcn () != Ipv4Header::ECN_NotECT)
        {
            ipv4.SetEcn (Ipv4Header::ECN_CE);
        }
        packet->AddHeader (ipv4);
    }
    if (!m_promiscCallback.IsNull ())
    {
        m_promiscCallback (this, packet, header.protocol, GetBroadcast (), m_address, PACKET_HOST);
    }
    m_rxCallback (this, packet, header.protocol, GetBroadcast ());
}

bool
FabricNetDevice::BuildIpv4Header (Ptr<const Packet> packet, FabricHeader& header) const
{
    // Read the IPv4 header and the first 14 bytes of a TCP/UDP header straight from the
    // packet buffer: cheaper than deserializing header objects on every packet.
    uint8_t buf[60 + 14];
    uint32_t n = packet->CopyData (buf, sizeof (buf));
    if (n < 20 || (buf[0] >> 4) != 4)
    {
        return false;
    }
    uint32_t ihlBytes = (buf[0] & 0x0F) * 4u;
    uint32_t totalLength = (uint32_t (buf[2]) << 8) | buf[3];
    uint8_t protocol = buf[9];
    uint32_t src = (uint32_t (buf[12]) << 24) | (uint32_t (buf[13]) << 16) |
                   (uint32_t (buf[14]) << 8) | buf[15];
    uint32_t dst = (uint32_t (buf[16]) << 24) | (uint32_t (buf[17]) << 16) |
                   (uint32_t (buf[18]) << 8) | buf[19];
    uint16_t srcPort = 0;
    uint16_t dstPort = 0;
    uint32_t l4HeaderBytes = 0;
    if ((protocol == kTcpProtocol || protocol == kUdpProtocol) && n >= ihlBytes + 14)
    {
        const uint8_t* l4 = buf + ihlBytes;
        srcPort = static_cast<uint16_t> ((l4[0] << 8) | l4[1]);
        dstPort = static_cast<uint16_t> ((l4[2] << 8) | l4[3]);
        l4HeaderBytes = protocol == kTcpProtocol ? (l4[12] >> 4) * 4u : kUdpHeaderBytes;
    }
    header.srcHost = static_cast<uint16_t> (src - kFabricFirstHostIpv4);
    header.dstHost = static_cast<uint16_t> (dst - kFabricFirstHostIpv4);
    header.protocol = kIpv4Protocol;
    header.ecn = static_cast<FabricEcn> (buf[1] & 0x03);
    header.flowHash = FabricFlowHash (src, dst, protocol, srcPort, dstPort);
    header.rank = 0;
    uint32_t headerBytes = ihlBytes + l4HeaderBytes;
    header.payloadBytes = totalLength > headerBytes ? totalLength - headerBytes : 0;
    return true;
}

bool
FabricNetDevice::Send (Ptr<Packet> packet, const Address& dest, uint16_t protocolNumber)
{
    if (protocolNumber != kIpv4Protocol)
    {
        NS_LOG_WARN ("FabricNetDevice: only IPv4 goes through Send(); use SendFabric()");
        return false;
    }
    FabricHeader header;
    if (!BuildIpv4Header (packet, header))
    {
        NS_LOG_WARN ("FabricNetDevice: malformed IPv4 packet dropped");
        return false;
    }
    return EnqueueFrame (packet, header, HostFrameNotBefore ());
}

bool
FabricNetDevice::SendFrom (Ptr<Packet> packet, const Address& source, const Address& dest,
                           uint16_t protocolNumber)
{
    return Send (packet, dest, protocolNumber);
}

void
FabricNetDevice::SetIfIndex (const uint32_t index)
{
    m_ifIndex = index;
}

uint32_t
FabricNetDevice::GetIfIndex () const
{
    return m_ifIndex;
}

Ptr<Channel>
FabricNetDevice::GetChannel () const
{
    return m_channel;
}

void
FabricNetDevice::SetAddress (Address address)
{
    m_address = Mac48Address::ConvertFrom (address);
}

Address
FabricNetDevice::GetAddress () const
{
    return m_address;
}

bool
FabricNetDevice::SetMtu (const uint16_t mtu)
{
    m_mtu = mtu;
    return true;
}

uint16_t
FabricNetDevice::GetMtu () const
{
    return m_mtu;
}

bool
FabricNetDevice::IsLinkUp () const
{
    return true;
}

void
FabricNetDevice::AddLinkChangeCallback (Callback<void> callback)
{
}

bool
FabricNetDevice::IsBroadcast () const
{
    return true;
}

Address
FabricNetDevice::GetBroadcast () const
{
    return Mac48Address::GetBroadcast ();
}

bool
FabricNetDevice::IsMulticast () const
{
    return false;
}

Address
FabricNetDevice::GetMulticast (Ipv4Address multicastGroup) const
{
    return Mac48Address::GetMulticast (multicastGroup);
}

Address
FabricNetDevice::GetMulticast (Ipv6Address addr) const
{
    return Mac48Address::GetMulticast (addr);
}

bool
FabricNetDevice::IsBridge () const
{
    return false;
}

bool
FabricNetDevice::IsPointToPoint () const
{
    return false;
}

Ptr<Node>
FabricNetDevice::GetNode () const
{
    return m_node;
}

void
FabricNetDevice::SetNode (Ptr<Node> node)
{
    m_node = node;
    m_nodeId = node->GetId ();
}

bool
FabricNetDevice::NeedsArp () const
{
    return false;
}

void
FabricNetDevice::SetReceiveCallback (NetDevice::ReceiveCallback cb)
{
    m_rxCallback = cb;
}

void
FabricNetDevice::SetPromiscReceiveCallback (NetDevice::PromiscReceiveCallback cb)
{
    m_promiscCallback = cb;
}

bool
FabricNetDevice::SupportsSendFrom () const
{
    return false;
}

} // namespace ns3
