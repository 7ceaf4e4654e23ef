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
TcpLeanHost::Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex)
{
    FabricHost::Setup (device, hostIndex, kTcpLeanProtocol);
}

void
TcpLeanHost::DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now)
{
    // The TCP header is the frame's transport fields (tcp-lean-header.h).
    if (frame.transportFlags & TCP_LEAN_ACK)
    {
        if (TcpLeanSender* sender = FindSender (frame.flowId))
        {
            sender->ReceiveAck (frame.seq, (frame.transportFlags & TCP_LEAN_SACK) != 0,
                                frame.sackSeq, (frame.transportFlags & TCP_LEAN_ECE) != 0, now);
        }
        return;
    }
    if (TcpLeanReceiver* receiver = FindReceiver (frame.flowId))
    {
        receiver->ReceiveData (frame.seq, frame.ecn == FabricEcn::CE, now);
    }
}

} // namespace ns3
