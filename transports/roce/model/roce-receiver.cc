/*
 * disaggsim: the receiving side of a RoCE RC queue pair.
 */
#include "roce-receiver.h"

#include "roce-header.h"
#include "roce-host.h"

#include "topologies/model/int-tag.h"

#include "ns3/log.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("RoceReceiver");
NS_OBJECT_ENSURE_REGISTERED (RoceReceiver);

TypeId
RoceReceiver::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::RoceReceiver")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<RoceReceiver> ()
            .AddAttribute ("AckIntervalPackets",
                           "ACK every this many full packets of in-order data, and the last "
                           "(1: HPCC's mix/config.txt and run.py L2_ACK_INTERVAL 1, an ACK "
                           "per packet; rdma-hw.cc's L2AckInterval 0 means none)",
                           UintegerValue (1),
                           MakeUintegerAccessor (&RoceReceiver::m_ackIntervalPackets),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("NackInterval",
                           "Least time between two NACKs of the same gap (500 us: rdma-hw.cc "
                           "\"NACK Generation Interval\"); a new gap is NACKed at once",
                           TimeValue (MicroSeconds (500)),
                           MakeTimeAccessor (&RoceReceiver::m_nackInterval),
                           MakeTimeChecker (Time (0)))
            .AddAttribute ("CnpInterval",
                           "DCQCN notification point: at most one CNP per QP in this time "
                           "(50 us: DCQCN SIGCOMM'15 §3.2, N)",
                           TimeValue (MicroSeconds (50)),
                           MakeTimeAccessor (&RoceReceiver::m_cnpInterval),
                           MakeTimeChecker (Time (0)))
            .AddTraceSource ("FlowReceived", "The last byte arrived: (flow id, time)",
                             MakeTraceSourceAccessor (&RoceReceiver::m_flowReceived),
                             "ns3::RoceReceiver::FlowReceivedCallback");
    return tid;
}

RoceReceiver::RoceReceiver () = default;

RoceReceiver::~RoceReceiver () = default;

void
RoceReceiver::DoDispose ()
{
    if (m_haveDataRecords)
    {
        IntRecords::Close (m_dataKey); // records no ACK will echo
        m_haveDataRecords = false;
    }
    m_host = nullptr;
    Object::DoDispose ();
}

void
RoceReceiver::Setup (Ptr<RoceHost> host, uint64_t flowId, uint16_t srcHost, uint64_t sizeBytes,
                     uint32_t mssBytes, uint32_t echoIntBytes)
{
    m_host = host;
    m_flowId = flowId;
    m_srcHost = srcHost;
    m_sizeBytes = sizeBytes;
    m_ackIntervalBytes = uint64_t (m_ackIntervalPackets) * mssBytes;
    m_nextAckAt = m_ackIntervalBytes;
    m_echoIntBytes = echoIntBytes;
}

void
RoceReceiver::ReceiveData (uint64_t seq, uint32_t payloadBytes, bool ce, uint32_t intKey,
                           Time now)
{
    if (m_echoIntBytes != 0)
    {
        // The records of the data packet being answered stay open until an ACK echoes them
        // (SendAck gives the ACK their key, no copy) or the next data packet replaces them,
        // so none is left over.
        if (m_haveDataRecords)
        {
            IntRecords::Close (m_dataKey);
        }
        m_dataKey = intKey;
        m_haveDataRecords = intKey != 0 && IntRecords::At (intKey).GetNHops () != 0;
        if (intKey != 0 && !m_haveDataRecords)
        {
            IntRecords::Close (intKey);
        }
    }
    if (ce && (!m_cnpSent || now >= m_lastCnp + m_cnpInterval))
    {
        m_cnpSent = true;
        m_lastCnp = now;
        ++m_cnps;
        FabricHeader frame;
        frame.srcHost = m_host->GetHostIndex ();
        frame.dstHost = m_srcHost;
        frame.protocol = kRoceProtocol;
        frame.transportFlags = ROCE_CNP;
        frame.flowId = m_flowId;
        m_host->SendFrame (m_host->FramePacket (kRoceCnpHeaderBytes), frame, now);
    }
    if (seq == m_expected)
    {
        m_expected += payloadBytes;
        if (m_expected >= m_sizeBytes)
        {
            SendAck (false, now);
            if (!m_complete)
            {
                m_complete = true;
                m_flowReceived (m_flowId, now);
            }
        }
        else if (m_expected >= m_nextAckAt)
        {
            // The next milestone is the next multiple of the interval above what is ACKed.
            m_nextAckAt = (m_expected / m_ackIntervalBytes + 1) * m_ackIntervalBytes;
            SendAck (false, now);
        }
        return;
    }
    if (seq > m_expected)
    {
        if (m_expected != m_lastNackSeq || now >= m_nackAllowedAt)
        {
            m_lastNackSeq = m_expected;
            m_nackAllowedAt = now + m_nackInterval;
            SendAck (true, now);
        }
        return;
    }
    SendAck (false, now); // a duplicate: ACK what we have
}

void
RoceReceiver::SendAck (bool nack, Time now)
{
    FabricHeader frame;
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_srcHost;
    frame.protocol = kRoceProtocol;
    frame.transportFlags = nack ? ROCE_NACK : ROCE_ACK;
    frame.flowId = m_flowId;
    frame.seq = static_cast<uint32_t> (m_expected);
    if (m_haveDataRecords)
    {
        frame.sackSeq = m_dataKey; // the echoed records go with their key (IntFrameKey)
        m_haveDataRecords = false;
    }
    if (nack)
    {
        ++m_nacks;
    }
    else
    {
        ++m_acks;
    }
    m_host->SendFrame (m_host->FramePacket (kRoceAckHeaderBytes + m_echoIntBytes), frame, now);
}

void
RoceReceiver::SendReadRequest (Time now)
{
    FabricHeader frame;
    frame.srcHost = m_host->GetHostIndex ();
    frame.dstHost = m_srcHost;
    frame.protocol = kRoceProtocol;
    frame.transportFlags = ROCE_READ_REQUEST;
    frame.flowId = m_flowId;
    m_host->SendFrame (m_host->FramePacket (kRoceReadRequestHeaderBytes), frame, now);
}

} // namespace ns3
