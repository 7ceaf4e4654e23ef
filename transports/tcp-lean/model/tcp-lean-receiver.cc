/*
 * disaggsim: the receiving end of one lean TCP connection: cumulative ACKs, delayed ACKs,
 * SACK, DCTCP's ECN echo.
 */
#include "tcp-lean-receiver.h"

#include "tcp-lean-header.h"
#include "tcp-lean-host.h"

#include "ns3/log.h"
#include "ns3/packet.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpLeanReceiver");

TcpLeanReceiver::TcpLeanReceiver (const TcpLeanReceiverConfig& config, TcpLeanHost* host,
                                  uint64_t flowId, uint16_t srcHost, uint64_t sizeBytes,
                                  uint32_t ackFlowHash, ReceivedCallback received)
      : m_config (config)
      , m_host (host)
      , m_flowId (flowId)
      , m_sizeBytes (sizeBytes)
      , m_nSegments (static_cast<uint32_t> ((sizeBytes + config.mssBytes - 1) / config.mssBytes))
      , m_ackFlowHash (ackFlowHash)
      , m_srcHost (srcHost)
      , m_received ((m_nSegments + 64) / 64, 0)
      , m_receivedCallback (std::move (received))
{
}

TcpLeanReceiver::~TcpLeanReceiver ()
{
    m_delAckEvent.Cancel ();
}

void
TcpLeanReceiver::ReceiveData (uint32_t offset, bool ce, Time now)
{
    const uint32_t segment = offset / m_config.mssBytes;
    if (segment >= m_nSegments)
    {
        NS_LOG_WARN ("flow " << m_flowId << ": data beyond the flow's end, offset " << offset);
        return;
    }
    if (m_config.dctcp && ce != m_ceState)
    {
        // RFC 8257 §3.2: a CE state change with a delayed ACK pending sends that ACK now,
        // with the old state's ECE.
        if (m_unacked > 0)
        {
            SendAck (m_ceState, false, 0, now);
        }
        m_ceState = ce;
    }
    const bool ece = m_config.dctcp && m_ceState;
    if (segment < m_cumSegment || Received (segment))
    {
        SendAck (ece, false, 0, now); // a duplicate: ACK at once (RFC 5681 §4.2)
        return;
    }
    m_received[segment >> 6] |= uint64_t (1) << (segment & 63);
    if (segment > m_cumSegment)
    {
        // out of order: one more block unless it touches one (RFC 2018 §4)
        const bool left = Received (segment - 1) && segment - 1 >= m_cumSegment;
        const bool right = segment + 1 < m_nSegments && Received (segment + 1);
        m_oooBlocks = m_oooBlocks + 1 - (left ? 1 : 0) - (right ? 1 : 0);
        SendAck (ece, true, segment, now);
        return;
    }
    // in order: absorb the block that starts right above it, if any
    const bool fillsGap = segment + 1 < m_nSegments && Received (segment + 1);
    if (fillsGap)
    {
        --m_oooBlocks;
    }
    while (m_cumSegment < m_nSegments && Received (m_cumSegment))
    {
        ++m_cumSegment;
    }
    if (m_cumSegment == m_nSegments)
    {
        m_receivedCallback (m_flowId, now);
        SendAck (ece, false, 0, now);
        return;
    }
    if (fillsGap || m_oooBlocks > 0)
    {
        SendAck (ece, false, 0, now); // a gap remains or was filled: ACK at once
        return;
    }
    if (m_quickAck || ++m_unacked >= m_config.delAckCount)
    {
        SendAck (ece, false, 0, now);
    }
    else if (!m_delAckEvent.IsRunning ())
    {
        m_delAckEvent = Simulator::Schedule (m_config.delAckTimeout,
                                             &TcpLeanReceiver::OnDelAckTimeout, this);
    }
}

void
TcpLeanReceiver::OnDelAckTimeout ()
{
    if (m_unacked > 0)
    {
        SendAck (m_config.dctcp && m_ceState, false, 0, Simulator::Now ());
    }
}

void
TcpLeanReceiver::SendAck (bool ece, bool hasSack, uint32_t sackSegment, Time now)
{
    m_unacked = 0;
    m_quickAck = false;
    m_delAckEvent.Cancel ();
    ++m_acksSent;
    FabricHeader frame;
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_srcHost;
    frame.protocol = kTcpLeanProtocol;
    frame.flowHash = m_ackFlowHash;
    // DCTCP's ACKs are ECT too, as ns-3's in DctcpEcn mode (TcpSocketBase::AddSocketTags) and
    // Linux's (dctcp_init: INET_ECN_xmit): ports mark them like data (a CE on an ACK is not
    // acted upon)
    frame.ecn = m_config.dctcp ? FabricEcn::ECT0 : FabricEcn::NOT_ECT;
    frame.payloadBytes = 0;
    frame.transportFlags = static_cast<uint8_t> (TCP_LEAN_ACK | (ece ? TCP_LEAN_ECE : 0) |
                                                 (hasSack ? TCP_LEAN_SACK : 0));
    frame.flowId = m_flowId;
    frame.seq = static_cast<uint32_t> (
        std::min<uint64_t> (uint64_t (m_cumSegment) * m_config.mssBytes, m_sizeBytes));
    frame.sackSeq = sackSegment * m_config.mssBytes;
    const uint32_t bytes = kTcpLeanHeaderBytes + TcpLeanSackOptionBytes (m_oooBlocks);
    m_host->Send (Create<Packet> (bytes), frame, now);
}

} // namespace ns3
