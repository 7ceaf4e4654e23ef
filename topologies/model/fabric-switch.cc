/*
 * disaggsim: a cut-through fabric switch (ToR or spine) with precomputed port tables.
 */
#include "fabric-switch.h"

#include "ns3/log.h"
#include "ns3/simulator.h"
#include "ns3/uinteger.h"

#include <algorithm>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("FabricSwitch");
NS_OBJECT_ENSURE_REGISTERED (FabricSwitch);

TypeId
FabricSwitch::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FabricSwitch")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<FabricSwitch> ()
            .AddAttribute ("SwitchingDelay",
                           "Cut-through latency from head arrival to forwarding (0.24 us, "
                           "Gao et al. OSDI'16 Table 4)",
                           TimeValue (NanoSeconds (240)),
                           MakeTimeAccessor (&FabricSwitch::m_switchingDelay), MakeTimeChecker ())
            .AddAttribute ("EcmpSalt",
                           "Mixed into the flow hash before the ECMP modulo (0 = flowHash % n)",
                           UintegerValue (0), MakeUintegerAccessor (&FabricSwitch::m_ecmpSalt),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("SharedBufferBytes",
                           "Packet memory shared by all ports in wire bytes, on top of each "
                           "port's own limit (a FabricSharedBuffer, created at the first "
                           "AddPort); 0 (default) = none, each port has only its own buffer "
                           "(Gao et al. OSDI'16 §4.2: 36 KB per port)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&FabricSwitch::m_sharedBufferBytes),
                           MakeUintegerChecker<uint64_t> ());
    return tid;
}

FabricSwitch::FabricSwitch () = default;

FabricSwitch::~FabricSwitch () = default;

void
FabricSwitch::DoDispose ()
{
    for (const Ptr<FabricNetDevice>& port : m_ports)
    {
        port->SetFabricFrameSink (nullptr);
        if (port->GetQueue ())
        {
            port->GetQueue ()->SetSharedBuffer (nullptr);
        }
    }
    m_ports.clear ();
    m_sharedBuffer = nullptr;
    Object::DoDispose ();
}

uint32_t
FabricSwitch::AddPort (Ptr<FabricNetDevice> port)
{
    port->SetCutThrough (m_switchingDelay);
    port->SetFabricFrameSink (this);
    port->SetSwitchPortIndex (static_cast<uint32_t> (m_ports.size ()));
    m_ports.push_back (port);
    if (!m_sharedBuffer && m_sharedBufferBytes != 0)
    {
        m_sharedBuffer = CreateObjectWithAttributes<FabricSharedBuffer> (
            "SizeBytes", UintegerValue (m_sharedBufferBytes));
    }
    if (m_sharedBuffer)
    {
        NS_ABORT_MSG_IF (!port->GetQueue (), "FabricSwitch::AddPort: a shared buffer needs the "
                                             "port's queue set first");
        port->GetQueue ()->SetSharedBuffer (PeekPointer (m_sharedBuffer));
        m_sharedBuffer->AddPort (PeekPointer (port), port->GetSwitchPortIndex ());
    }
    return static_cast<uint32_t> (m_ports.size () - 1);
}

void
FabricSwitch::SetSharedBuffer (Ptr<FabricSharedBuffer> buffer)
{
    m_sharedBuffer = buffer;
    for (const Ptr<FabricNetDevice>& port : m_ports)
    {
        NS_ABORT_MSG_IF (!port->GetQueue (), "FabricSwitch::SetSharedBuffer: a port has no queue");
        port->GetQueue ()->SetSharedBuffer (PeekPointer (buffer));
        if (buffer)
        {
            buffer->AddPort (PeekPointer (port), port->GetSwitchPortIndex ());
        }
    }
}

Ptr<FabricNetDevice>
FabricSwitch::GetPort (uint32_t index) const
{
    return m_ports.at (index);
}

void
FabricSwitch::SetRoute (uint32_t dstHost, const std::vector<uint32_t>& ports)
{
    NS_ABORT_MSG_IF (ports.empty (), "FabricSwitch: empty ECMP group for host " << dstHost);
    for (uint32_t port : ports)
    {
        NS_ABORT_MSG_IF (port >= m_ports.size (), "FabricSwitch: no port " << port);
    }
    auto it = std::find (m_groups.begin (), m_groups.end (), ports);
    uint32_t group = static_cast<uint32_t> (it - m_groups.begin ());
    if (it == m_groups.end ())
    {
        m_groups.push_back (ports);
    }
    if (m_groupOfHost.size () <= dstHost)
    {
        m_groupOfHost.resize (dstHost + 1, UINT32_MAX);
    }
    m_groupOfHost[dstHost] = group;
    m_flatDirty = true;
}

void
FabricSwitch::BuildFlatRoutes () const
{
    m_flatRoutes.assign (m_groupOfHost.size (), FlatRoute{});
    m_flatPorts.clear ();
    std::vector<FlatRoute> ofGroup (m_groups.size ());
    for (std::size_t g = 0; g < m_groups.size (); ++g)
    {
        ofGroup[g] = FlatRoute{static_cast<uint32_t> (m_flatPorts.size ()),
                               static_cast<uint32_t> (m_groups[g].size ())};
        m_flatPorts.insert (m_flatPorts.end (), m_groups[g].begin (), m_groups[g].end ());
    }
    for (std::size_t h = 0; h < m_groupOfHost.size (); ++h)
    {
        if (m_groupOfHost[h] != UINT32_MAX)
        {
            m_flatRoutes[h] = ofGroup[m_groupOfHost[h]];
        }
    }
    m_flatDirty = false;
}

const std::vector<uint32_t>&
FabricSwitch::GetRoute (uint32_t dstHost) const
{
    NS_ABORT_MSG_IF (dstHost >= m_groupOfHost.size () || m_groupOfHost[dstHost] == UINT32_MAX,
                     "FabricSwitch: no route to host " << dstHost);
    return m_groups[m_groupOfHost[dstHost]];
}

uint32_t
FabricSwitch::SelectPort (const FabricHeader& header) const
{
    if (m_flatDirty)
    {
        BuildFlatRoutes ();
    }
    NS_ABORT_MSG_IF (header.dstHost >= m_flatRoutes.size () ||
                         m_flatRoutes[header.dstHost].size == 0,
                     "FabricSwitch: no route to host " << header.dstHost);
    const FlatRoute route = m_flatRoutes[header.dstHost];
    const uint32_t* group = m_flatPorts.data () + route.first;
    if (route.size == 1)
    {
        return group[0];
    }
    if (header.pinnedUplink != kFabricAnyUplink)
    {
        return group[header.pinnedUplink % route.size];
    }
    uint32_t hash = header.flowHash;
    if (m_ecmpSalt != 0)
    {
        // murmur3 fmix32 of the salted hash.
        hash ^= m_ecmpSalt;
        hash ^= hash >> 16;
        hash *= 0x85EBCA6BU;
        hash ^= hash >> 13;
        hash *= 0xC2B2AE35U;
        hash ^= hash >> 16;
    }
    // hash % size; a mask when size is a power of two (4 spines): the same port, no division.
    const uint32_t size = route.size;
    return group[(size & (size - 1)) == 0 ? hash & (size - 1) : hash % size];
}

void
FabricSwitch::ReceiveFrame (FabricNetDevice* inPort, Ptr<Packet>& packet,
                            const FabricHeader& header, Time txTimeIn, Time now,
                            uint32_t wireBytes)
{
    FabricNetDevice* out = PeekPointer (m_ports[SelectPort (header)]);
    // Delivered at head + switching delay.  The tail arrives txTimeIn after the head; the
    // egress must not finish before tail + switching delay: start >= now + txTimeIn - txOut.
    Time txOut = out->TxTime (wireBytes);
    Time notBefore = now;
    if (txTimeIn > txOut)
    {
        notBefore += txTimeIn - txOut;
    }
    ++m_forwarded;
    out->EnqueueFrame (
        FabricQueueItem (packet, header, notBefore, inPort->GetSwitchPortIndex (), wireBytes),
        now);
}

} // namespace ns3
