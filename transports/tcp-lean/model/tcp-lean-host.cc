/*
 * disaggsim: the lean TCP stack of one host: its connections' ends on the host's fabric port.
 */
#include "tcp-lean-host.h"

#include "tcp-lean-header.h"

#include "ns3/log.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("TcpLeanHost");
NS_OBJECT_ENSURE_REGISTERED (TcpLeanHost);

TypeId
TcpLeanHost::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::TcpLeanHost")
                            .SetParent<FabricHost> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<TcpLeanHost> ();
    return tid;
}

TcpLeanHost::TcpLeanHost () = default;

TcpLeanHost::~TcpLeanHost () = default;

void
TcpLeanHost::DoDispose ()
{
    m_senders.clear ();
    m_receivers.clear ();
    FabricHost::DoDispose ();
}

void
TcpLeanHost::Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex)
{
    FabricHost::Setup (device, hostIndex, kTcpLeanProtocol);
}

void
TcpLeanHost::AddSender (uint64_t flowId, Ptr<TcpLeanSender> sender)
{
    m_senders[flowId] = sender;
}

void
TcpLeanHost::AddReceiver (uint64_t flowId, Ptr<TcpLeanReceiver> receiver)
{
    m_receivers[flowId] = receiver;
}

void
TcpLeanHost::RemoveSender (uint64_t flowId)
{
    m_senders.erase (flowId);
}

void
TcpLeanHost::RemoveReceiver (uint64_t flowId)
{
    m_receivers.erase (flowId);
}

void
TcpLeanHost::DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now)
{
    // The TCP header is the frame's transport fields (tcp-lean-header.h).
    if (frame.transportFlags & TCP_LEAN_ACK)
    {
        auto it = m_senders.find (frame.flowId);
        if (it != m_senders.end ())
        {
            it->second->ReceiveAck (frame.seq, (frame.transportFlags & TCP_LEAN_SACK) != 0,
                                    frame.sackSeq, (frame.transportFlags & TCP_LEAN_ECE) != 0,
                                    now);
        }
        return;
    }
    auto it = m_receivers.find (frame.flowId);
    if (it != m_receivers.end ())
    {
        it->second->ReceiveData (frame.seq, frame.ecn == FabricEcn::CE, now);
    }
}

} // namespace ns3
