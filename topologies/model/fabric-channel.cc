/*
 * disaggsim: point-to-point cable between two fabric ports.
 */
#include "fabric-channel.h"

#include "fabric-net-device.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FabricChannel");
NS_OBJECT_ENSURE_REGISTERED (FabricChannel);

TypeId
FabricChannel::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FabricChannel")
            .SetParent<Channel> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FabricChannel> ()
            .AddAttribute ("Delay", "Propagation delay of the cable", TimeValue (Seconds (0)),
                           MakeTimeAccessor (&FabricChannel::m_delay), MakeTimeChecker ());
    return tid;
}

FabricChannel::FabricChannel () = default;

FabricChannel::~FabricChannel () = default;

void
FabricChannel::Attach (Ptr<FabricNetDevice> device)
{
    NS_ABORT_MSG_IF (m_nDevices >= 2, "FabricChannel: a cable has exactly two ends");
    m_devices[m_nDevices++] = device;
}

void
FabricChannel::Transmit (const Ptr<FabricNetDevice>& sender, const Ptr<Packet>& packet,
                         const FabricHeader& header, Time start, Time txTime)
{
    FabricNetDevice* peer = PeekPointer (m_devices[sender == m_devices[0] ? 1 : 0]);
    Time arrival = peer->IsCutThrough () ? start + m_delay + peer->GetCutThroughDelay ()
                                         : start + txTime + m_delay;
    Simulator::ScheduleWithContext (peer->GetNodeId (), arrival - Simulator::Now (),
                                    &FabricNetDevice::Receive, peer, packet, header, txTime);
}

std::size_t
FabricChannel::GetNDevices () const
{
    return m_nDevices;
}

Ptr<NetDevice>
FabricChannel::GetDevice (std::size_t i) const
{
    return m_devices[i];
}

} // namespace ns3
