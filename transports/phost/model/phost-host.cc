/*
 * disaggsim: the pHost stack of one host.
 */
#include "phost-host.h"

#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/trace-source-accessor.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PhostHost");
NS_OBJECT_ENSURE_REGISTERED (PhostHost);

namespace
{
/// Flow hash of a pHost frame: mixes the flow id (murmur3 finalizer) and adds the packet
/// number, so consecutive data packets of a flow take different ECMP uplinks (packet
/// spraying, which pHost assumes for its full-bisection core: CoNEXT'15 §2).
uint32_t
SprayHash (uint64_t flowId, uint32_t packet)
{
    uint64_t h = flowId + 0x9E3779B97F4A7C15ULL;
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDULL;
    h ^= h >> 33;
    return static_cast<uint32_t> (h) + packet;
}
} // namespace

TypeId
PhostHost::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PhostHost")
            .SetParent<FabricHost> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PhostHost> ()
            .AddTraceSource ("TokenSent", "The destination sent a token: (flow id, packet)",
                             MakeTraceSourceAccessor (&PhostHost::m_tokenSentTrace),
                             "ns3::PhostHost::PacketTracedCallback")
            .AddTraceSource ("DataSent", "The source sent a data packet: (flow id, packet)",
                             MakeTraceSourceAccessor (&PhostHost::m_dataSentTrace),
                             "ns3::PhostHost::PacketTracedCallback")
            .AddTraceSource ("Downgraded", "The destination downgraded a flow: (flow id)",
                             MakeTraceSourceAccessor (&PhostHost::m_downgradedTrace),
                             "ns3::PhostHost::FlowTracedCallback");
    return tid;
}

PhostHost::PhostHost () = default;

PhostHost::~PhostHost () = default;

void
PhostHost::DoDispose ()
{
    if (m_source)
    {
        m_source->Stop ();
        m_destination->Stop ();
    }
    m_source.reset ();
    m_destination.reset ();
    m_finished = MakeNullCallback<void, uint64_t> ();
    FabricHost::DoDispose ();
}

void
PhostHost::Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex, const PhostParams& params,
                  Callback<void, uint64_t> finished)
{
    m_params = params;
    m_finished = finished;
    m_source = std::make_unique<PhostSource> (*this, m_params);
    m_destination = std::make_unique<PhostDestination> (*this, m_params);
    FabricHost::Setup (device, hostIndex, kPhostProtocol);
}

void
PhostHost::SendControl (uint8_t type, uint64_t flowId, uint32_t packet, uint64_t sizeBytes,
                        uint16_t peer)
{
    PhostHeader header;
    header.type = type;
    header.flowId = flowId;
    header.packet = packet;
    header.sizeBytes = sizeBytes;
    Ptr<Packet> p = Create<Packet> ();
    p->AddHeader (header);
    FabricHeader frame;
    frame.srcHost = GetHostIndex ();
    frame.dstHost = peer;
    frame.protocol = kPhostProtocol;
    frame.flowHash = SprayHash (flowId, packet);
    frame.trafficClass = static_cast<uint8_t> (m_params.controlLevel);
    frame.payloadBytes = 0;
    Send (p, frame);
}

uint32_t
PhostHost::SendData (uint64_t flowId, uint32_t packet, uint64_t sizeBytes, uint16_t peer,
                     uint32_t level, bool carriesRts)
{
    const uint64_t offset = static_cast<uint64_t> (packet) * m_params.mssBytes;
    const auto payload =
        static_cast<uint32_t> (std::min<uint64_t> (m_params.mssBytes, sizeBytes - offset));
    PhostHeader header;
    header.type = carriesRts ? PhostHeader::DATA_RTS : PhostHeader::DATA;
    header.flowId = flowId;
    header.packet = packet;
    header.sizeBytes = sizeBytes;
    Ptr<Packet> p = Create<Packet> (payload);
    p->AddHeader (header);
    FabricHeader frame;
    frame.srcHost = GetHostIndex ();
    frame.dstHost = peer;
    frame.protocol = kPhostProtocol;
    frame.flowHash = SprayHash (flowId, packet);
    frame.trafficClass = static_cast<uint8_t> (level);
    frame.payloadBytes = payload;
    m_dataSentTrace (flowId, packet);
    Send (p, frame);
    return payload + kPhostHeaderBytes + kFabricHeaderBytes;
}

void
PhostHost::DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time /* now */)
{
    PhostHeader header;
    packet->PeekHeader (header);
    switch (header.type)
    {
        case PhostHeader::TOKEN:
            m_source->ReceiveToken (header.flowId, header.packet);
            break;
        case PhostHeader::ACK:
            m_source->ReceiveAck (header.flowId);
            break;
        case PhostHeader::RTS:
            m_destination->ReceiveRts (header.flowId, frame.srcHost, header.sizeBytes);
            break;
        case PhostHeader::DATA:
        case PhostHeader::DATA_RTS:
            m_destination->ReceiveData (header.flowId, frame.srcHost, header.sizeBytes,
                                        header.packet);
            break;
        default:
            NS_LOG_WARN ("host " << GetHostIndex () << ": unknown pHost packet type "
                                 << unsigned (header.type));
    }
}

} // namespace ns3
