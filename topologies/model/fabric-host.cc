/*
 * disaggsim: a transport's stack on one host's raw fabric port.
 */
#include "fabric-host.h"

#include "fabric-net-device.h"

#include "ns3/log.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FabricHost");
NS_OBJECT_ENSURE_REGISTERED (FabricHost);

TypeId
FabricHost::GetTypeId ()
{
    static TypeId tid = TypeId ("ns3::FabricHost").SetParent<Object> ().SetGroupName ("Disaggsim");
    return tid;
}

FabricHost::FabricHost () = default;

FabricHost::~FabricHost () = default;

void
FabricHost::DoDispose ()
{
    if (m_device)
    {
        m_device->SetFabricFrameSink (nullptr);
    }
    m_device = nullptr;
    Object::DoDispose ();
}

void
FabricHost::Setup (Ptr<FabricNetDevice> device, uint16_t hostIndex, uint16_t protocol)
{
    m_device = device;
    m_hostIndex = hostIndex;
    m_protocol = protocol;
    device->SetFabricFrameSink (this);
    DoSetup ();
}

void
FabricHost::DoSetup ()
{
}

bool
FabricHost::Send (Ptr<Packet> packet, const FabricHeader& frame)
{
    return Send (std::move (packet), frame, Simulator::Now ());
}

bool
FabricHost::Send (Ptr<Packet> packet, const FabricHeader& frame, Time now)
{
    if (!m_device->SendFabric (packet, frame, now))
    {
        ++m_nicDrops;
        return false;
    }
    return true;
}

bool
FabricHost::DropsAtNic (const FabricHeader& frame, uint32_t packetBytes)
{
    if (!m_device->DropRefusedFabricFrame (frame, packetBytes + kFabricHeaderBytes))
    {
        return false;
    }
    ++m_nicDrops;
    return true;
}

void
FabricHost::ReceiveFrame (FabricNetDevice* device, Ptr<Packet>& packet,
                          const FabricHeader& frame, Time txTime, Time now,
                          uint32_t /* wireBytes */)
{
    if (frame.protocol != m_protocol)
    {
        NS_LOG_WARN ("host " << m_hostIndex << ": frame of protocol " << frame.protocol
                             << ", expected " << m_protocol);
        return;
    }
    DoReceive (TakePtr (packet), frame, now);
}

} // namespace ns3
