/*
 * disaggsim: the pFabric stack of one host: its flows' endpoints on the host's fabric port.
 */
#include "pfabric-host.h"

#include "pfabric-header.h"
#include "pfabric-queue.h"
#include "pfabric-receiver.h"
#include "pfabric-sender.h"
#include "topologies/model/fabric-net-device.h"

#include "ns3/log.h"
#include "ns3/packet.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfabricHost");
NS_OBJECT_ENSURE_REGISTERED (PfabricHost);

TypeId
PfabricHost::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::PfabricHost")
                            .SetParent<FabricHost> ()
                            .SetGroupName ("Disaggsim")
                            .AddConstructor<PfabricHost> ();
    return tid;
}

PfabricHost::PfabricHost () = default;

PfabricHost::~PfabricHost () = default;

void
PfabricHost::DoDispose ()
{
    m_nicQueue = nullptr;
    FlowDemuxHost::DoDispose ();
}

void
PfabricHost::Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex)
{
    FabricHost::Setup (device, hostIndex, kPfabricProtocol);
}

void
PfabricHost::DoSetup ()
{
    m_nicQueue = DynamicCast<PfabricQueue> (GetDevice ()->GetQueue ());
}

bool
PfabricHost::NicHoldsFlow (uint64_t flowId) const
{
    return m_nicQueue && m_nicQueue->HoldsFlow (PfabricFlowKey (PfabricFlowHash (flowId, 0, false)),
                                                GetHostIndex ());
}

void
PfabricHost::DoReceive (Ptr<Packet> packet, const FabricHeader& frame, Time now)
{
    // The pFabric header is the frame's transport fields (pfabric-header.h): nothing to
    // deserialize.
    const bool probe = (frame.transportFlags & PFABRIC_PROBE) != 0;
    if (frame.transportFlags & PFABRIC_ACK)
    {
        if (PfabricSender* sender = FindSender (frame.flowId))
        {
            sender->ReceiveAck (frame.seq, frame.sackSeq, probe, now);
        }
        return;
    }
    PfabricReceiver* receiver = FindReceiver (frame.flowId);
    if (receiver == nullptr)
    {
        NS_LOG_WARN ("host " << GetHostIndex () << ": data of unknown flow " << frame.flowId);
        return;
    }
    receiver->ReceiveData (frame.seq, frame.payloadBytes, probe, frame.flowHash, now);
}

} // namespace ns3
