/*
 * disaggsim: pFabric end-host receiver: one cumulative ACK per data packet.
 */
#include "pfabric-receiver.h"

#include "pfabric-header.h"
#include "pfabric-host.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfabricReceiver");
NS_OBJECT_ENSURE_REGISTERED (PfabricReceiver);

TypeId
PfabricReceiver::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PfabricReceiver")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PfabricReceiver> ()
            .AddTraceSource ("FlowReceived", "Every byte of the flow has arrived: (flow id, time)",
                             MakeTraceSourceAccessor (&PfabricReceiver::m_flowReceived),
                             "ns3::PfabricReceiver::FlowReceivedCallback");
    return tid;
}

PfabricReceiver::PfabricReceiver () = default;

PfabricReceiver::PfabricReceiver (const PfabricReceiver& prototype)
      : Object (prototype)
      , m_flowReceived (prototype.m_flowReceived)
{
}

PfabricReceiver::~PfabricReceiver () = default;

void
PfabricReceiver::DoDispose ()
{
    m_host = nullptr;
    Object::DoDispose ();
}

void
PfabricReceiver::Setup (Ptr<PfabricHost> host, uint64_t flowId, uint16_t srcHost,
                        uint64_t sizeBytes, uint32_t mssBytes)
{
    NS_ABORT_MSG_IF (sizeBytes == 0 || mssBytes == 0, "PfabricReceiver: empty flow " << flowId);
    m_host = host;
    m_flowId = flowId;
    m_srcHost = srcHost;
    m_sizeBytes = sizeBytes;
    m_mssBytes = mssBytes;
    m_nPackets = static_cast<uint32_t> ((sizeBytes + mssBytes - 1) / mssBytes);
    m_received.Reset (m_nPackets);
}

void
PfabricReceiver::ReceiveData (uint32_t seq, uint32_t payloadBytes, bool probe, uint32_t flowHash,
                              Time now)
{
    if (!probe)
    {
        uint32_t index = seq / m_mssBytes;
        if (index >= m_nPackets)
        {
            NS_LOG_WARN ("flow " << m_flowId << ": data beyond the flow's end, seq " << seq);
            return;
        }
        if (m_received[index])
        {
            ++m_duplicates;
        }
        else
        {
            m_received.Set (index);
            m_receivedBytes += payloadBytes;
            while (m_cumPacket < m_nPackets && m_received[m_cumPacket])
            {
                ++m_cumPacket;
            }
            if (!m_complete && m_receivedBytes >= m_sizeBytes)
            {
                m_complete = true;
                m_flowReceived (m_flowId, now);
            }
        }
    }
    SendAck (seq, probe, flowHash, now);
}

void
PfabricReceiver::SendAck (uint32_t sackSeq, bool probe, uint32_t flowHash, Time now)
{
    FabricHeader frame;
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_srcHost;
    frame.protocol = kPfabricProtocol;
    frame.flowHash = flowHash;
    frame.rank = 0;
    frame.payloadBytes = 0;
    // the pFabric header, carried in the frame (pfabric-header.h); the packet is its bytes
    frame.transportFlags = PFABRIC_ACK | (probe ? PFABRIC_PROBE : 0);
    frame.flowId = m_flowId;
    frame.seq = static_cast<uint32_t> (
        std::min<uint64_t> (uint64_t (m_cumPacket) * m_mssBytes, m_sizeBytes));
    frame.sackSeq = sackSeq;
    m_host->Send (Create<Packet> (kPfabricHeaderBytes), frame, now);
}

} // namespace ns3
