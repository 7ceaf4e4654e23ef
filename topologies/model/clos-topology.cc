/*
 * disaggsim: the two-tier Clos (leaf-spine) fabric of Gao et al. OSDI'16 §4.2.
 */
#include "clos-topology.h"

#include "drop-tail-ecn-queue.h"
#include "fabric-channel.h"
#include "switch-mmu.h"

#include "ns3/double.h"
#include "ns3/enum.h"
#include "ns3/log.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <cmath>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("ClosTopology");
NS_OBJECT_ENSURE_REGISTERED (ClosTopology);

TypeId
ClosTopology::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::ClosTopology")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<ClosTopology> ()
            .AddAttribute ("Racks", "Number of racks (9, Gao et al. OSDI'16 §4.2)",
                           UintegerValue (9), MakeUintegerAccessor (&ClosTopology::m_racks),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("HostsPerRack",
                           "Hosts per rack (16: the 144-host topology of pFabric SIGCOMM'13 "
                           "§5 that the paper reuses)",
                           UintegerValue (16), MakeUintegerAccessor (&ClosTopology::m_hostsPerRack),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("Spines", "Number of spine switches (4, pFabric SIGCOMM'13 §5)",
                           UintegerValue (4), MakeUintegerAccessor (&ClosTopology::m_spines),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute (
                "AccessRate", "Host-ToR link rate (40 or 100 Gbps, Gao et al. OSDI'16 §4.2)",
                DataRateValue (DataRate ("40Gbps")),
                MakeDataRateAccessor (&ClosTopology::m_accessRate), MakeDataRateChecker ())
            .AddAttribute ("SpineRateFactor",
                           "ToR-spine rate / access rate (4: full bisection with 16 hosts and 4 "
                           "spines, pFabric SIGCOMM'13 §5)",
                           UintegerValue (4),
                           MakeUintegerAccessor (&ClosTopology::m_spineRateFactor),
                           MakeUintegerChecker<uint32_t> (1))
            .AddAttribute ("BufferBytes",
                           "Buffer per switch port in wire bytes (36 KB, Gao et al. OSDI'16 "
                           "§4.2)",
                           UintegerValue (36864),
                           MakeUintegerAccessor (&ClosTopology::m_bufferBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("Fabric",
                           "Loss model: lossy (per-port drop-tail buffers of BufferBytes) or "
                           "lossless (each switch a SwitchMmu: a shared buffer of "
                           "LosslessBufferBytes, PFC and RED-ECN; topologies/doc/lossless.md)",
                           EnumValue (ClosTopology::LOSSY),
                           MakeEnumAccessor (&ClosTopology::m_fabric),
                           MakeEnumChecker (ClosTopology::LOSSY, "lossy", ClosTopology::LOSSLESS,
                                            "lossless"))
            .AddAttribute ("LosslessBufferBytes",
                           "Shared buffer of each switch of the lossless fabric in wire bytes; "
                           "0 (default) = BufferBytes x its ports (the memory of the lossy "
                           "fabric's per-port buffers, pooled) + its ports' PFC headroom and "
                           "reserve",
                           UintegerValue (0),
                           MakeUintegerAccessor (&ClosTopology::m_losslessBufferBytes),
                           MakeUintegerChecker<uint64_t> ())
            .AddAttribute ("HostBufferBytes", "Host NIC queue limit in wire bytes (0 = unlimited)",
                           UintegerValue (0),
                           MakeUintegerAccessor (&ClosTopology::m_hostBufferBytes),
                           MakeUintegerChecker<uint32_t> ())
            .AddAttribute ("SwitchingDelay",
                           "Cut-through switching delay (0.24 us, Gao et al. OSDI'16 Table 4)",
                           TimeValue (NanoSeconds (240)),
                           MakeTimeAccessor (&ClosTopology::m_switchingDelay), MakeTimeChecker ())
            .AddAttribute ("IntraRackCableM",
                           "Host-ToR cable length in m (4 m, Gao et al. OSDI'16 §3.3)",
                           DoubleValue (4), MakeDoubleAccessor (&ClosTopology::m_intraRackCableM),
                           MakeDoubleChecker<double> (0))
            .AddAttribute ("InterRackCableM",
                           "ToR-spine cable length in m (40 m, Gao et al. OSDI'16 §3.3)",
                           DoubleValue (40), MakeDoubleAccessor (&ClosTopology::m_interRackCableM),
                           MakeDoubleChecker<double> (0))
            .AddAttribute ("PropagationPerM",
                           "Propagation delay per metre of cable (5 ns/m, Gao et al. OSDI'16 "
                           "§3.3)",
                           TimeValue (NanoSeconds (5)),
                           MakeTimeAccessor (&ClosTopology::m_propagationPerM), MakeTimeChecker ())
            .AddAttribute ("HostLinkDelay",
                           "Propagation delay of a host-ToR link, each way; negative (default): "
                           "IntraRackCableM x PropagationPerM (Table 4).  The authors' DDC "
                           "simulator uses 10 ns up + 210 ns down (NetSys/simulator "
                           "coresim/queue.cpp, ddc != 0): 110 ns each way gives every path "
                           "the same delay",
                           TimeValue (NanoSeconds (-1)),
                           MakeTimeAccessor (&ClosTopology::m_hostLinkDelay), MakeTimeChecker ())
            .AddAttribute ("SpineLinkDelay",
                           "Propagation delay of a ToR-spine link, each way; negative (default): "
                           "InterRackCableM x PropagationPerM (Table 4).  The authors' DDC "
                           "simulator uses 400 ns (NetSys/simulator coresim/queue.cpp)",
                           TimeValue (NanoSeconds (-1)),
                           MakeTimeAccessor (&ClosTopology::m_spineLinkDelay), MakeTimeChecker ())
            .AddAttribute ("EcmpSalt",
                           "Salt of the ToRs' per-flow ECMP hash (the driver sets the run seed)",
                           UintegerValue (0), MakeUintegerAccessor (&ClosTopology::m_ecmpSalt),
                           MakeUintegerChecker<uint32_t> ());
    return tid;
}

ClosTopology::ClosTopology ()
{
    m_switchQueueFactory.SetTypeId (DropTailEcnQueue::GetTypeId ());
    m_hostQueueFactory.SetTypeId (DropTailEcnQueue::GetTypeId ());
}

ClosTopology::~ClosTopology () = default;

void
ClosTopology::SetSwitchQueue (const ObjectFactory& factory)
{
    NS_ABORT_MSG_IF (m_built, "ClosTopology: set queues before Build()");
    m_switchQueueFactory = factory;
}

void
ClosTopology::SetHostQueue (const ObjectFactory& factory)
{
    NS_ABORT_MSG_IF (m_built, "ClosTopology: set queues before Build()");
    m_hostQueueFactory = factory;
}

DataRate
ClosTopology::GetSpineRate () const
{
    return DataRate (m_accessRate.GetBitRate () * m_spineRateFactor);
}

Time
ClosTopology::GetIntraRackDelay () const
{
    if (!m_hostLinkDelay.IsNegative ())
    {
        return m_hostLinkDelay;
    }
    return PicoSeconds (std::llround (m_intraRackCableM * m_propagationPerM.GetPicoSeconds ()));
}

Time
ClosTopology::GetInterRackDelay () const
{
    if (!m_spineLinkDelay.IsNegative ())
    {
        return m_spineLinkDelay;
    }
    return PicoSeconds (std::llround (m_interRackCableM * m_propagationPerM.GetPicoSeconds ()));
}

void
ClosTopology::Build ()
{
    NS_ABORT_MSG_IF (m_built, "ClosTopology: Build() called twice");
    NS_ABORT_MSG_IF (GetNHosts () > 65535, "ClosTopology: at most 65535 hosts (16-bit ids)");
    m_built = true;
    const uint32_t nHosts = GetNHosts ();
    m_hostNodes.Create (nHosts);
    m_switchNodes.Create (m_racks + m_spines);

    auto makeDevice =
        [] (Ptr<Node> node, DataRate rate, const ObjectFactory& queueFactory, uint32_t maxBytes)
    {
        Ptr<FabricNetDevice> device = CreateObject<FabricNetDevice> ();
        device->SetDataRate (rate);
        Ptr<FabricQueue> queue = queueFactory.Create<FabricQueue> ();
        queue->SetMaxBytes (maxBytes);
        device->SetQueue (queue);
        node->AddDevice (device);
        return device;
    };
    auto connect = [] (Ptr<FabricNetDevice> a, Ptr<FabricNetDevice> b, Time delay)
    {
        Ptr<FabricChannel> channel = CreateObject<FabricChannel> ();
        channel->SetAttribute ("Delay", TimeValue (delay));
        a->Attach (channel);
        b->Attach (channel);
    };
    auto makeSwitch = [this] (Ptr<Node> node)
    {
        Ptr<FabricSwitch> sw = CreateObject<FabricSwitch> ();
        sw->SetAttribute ("SwitchingDelay", TimeValue (m_switchingDelay));
        sw->SetAttribute ("EcmpSalt", UintegerValue (m_ecmpSalt));
        node->AggregateObject (sw);
        return sw;
    };

    for (uint32_t r = 0; r < m_racks; ++r)
    {
        m_tors.push_back (makeSwitch (m_switchNodes.Get (r)));
    }
    for (uint32_t s = 0; s < m_spines; ++s)
    {
        m_spineSwitches.push_back (makeSwitch (m_switchNodes.Get (m_racks + s)));
    }

    // Host links: ToR port index = index of the host in its rack.
    for (uint32_t h = 0; h < nHosts; ++h)
    {
        uint32_t rack = GetRackOfHost (h);
        Ptr<FabricNetDevice> hostDevice =
            makeDevice (m_hostNodes.Get (h), m_accessRate, m_hostQueueFactory, m_hostBufferBytes);
        Ptr<FabricNetDevice> torPort = makeDevice (m_switchNodes.Get (rack), m_accessRate,
                                                   m_switchQueueFactory, SwitchPortBytes ());
        connect (hostDevice, torPort, GetIntraRackDelay ());
        m_tors[rack]->AddPort (torPort);
        m_hostDevices.push_back (hostDevice);
    }
    // Uplinks: ToR port hostsPerRack + s <-> spine s port r.
    DataRate spineRate = GetSpineRate ();
    for (uint32_t r = 0; r < m_racks; ++r)
    {
        for (uint32_t s = 0; s < m_spines; ++s)
        {
            Ptr<FabricNetDevice> up = makeDevice (m_switchNodes.Get (r), spineRate,
                                                  m_switchQueueFactory, SwitchPortBytes ());
            Ptr<FabricNetDevice> down = makeDevice (m_switchNodes.Get (m_racks + s), spineRate,
                                                    m_switchQueueFactory, SwitchPortBytes ());
            connect (up, down, GetInterRackDelay ());
            m_tors[r]->AddPort (up);
            m_spineSwitches[s]->AddPort (down);
        }
    }
    // Port tables.
    std::vector<uint32_t> uplinks;
    for (uint32_t s = 0; s < m_spines; ++s)
    {
        uplinks.push_back (m_hostsPerRack + s);
    }
    for (uint32_t r = 0; r < m_racks; ++r)
    {
        for (uint32_t h = 0; h < nHosts; ++h)
        {
            if (GetRackOfHost (h) == r)
            {
                m_tors[r]->SetRoute (h, {h % m_hostsPerRack});
            }
            else
            {
                m_tors[r]->SetRoute (h, uplinks);
            }
        }
    }
    for (uint32_t s = 0; s < m_spines; ++s)
    {
        for (uint32_t h = 0; h < nHosts; ++h)
        {
            m_spineSwitches[s]->SetRoute (h, {GetRackOfHost (h)});
        }
    }
    if (m_fabric == LOSSLESS)
    {
        for (const Ptr<FabricSwitch>& sw : GetSwitches ())
        {
            Ptr<SwitchMmu> mmu = CreateObject<SwitchMmu> ();
            sw->SetSharedBuffer (mmu); // sizes each port's headroom
            // Default: the lossy fabric's port buffers, pooled, on top of what PFC reserves.
            const uint64_t size =
                m_losslessBufferBytes != 0
                    ? m_losslessBufferBytes
                    : uint64_t (m_bufferBytes) * sw->GetNPorts () + mmu->GetReservedBytes ();
            mmu->SetAttribute ("SizeBytes", UintegerValue (size));
            mmu->CheckSize ("ClosTopology (LosslessBufferBytes)");
        }
        m_pfcMonitor = CreateObject<PfcMonitor> ();
        m_pfcMonitor->Watch (this);
    }
    NS_LOG_INFO ("Clos built: " << nHosts << " hosts, " << m_racks << " ToRs, " << m_spines
                                << " spines");
}

Ptr<Node>
ClosTopology::GetHost (uint32_t host) const
{
    NS_ABORT_MSG_IF (host >= m_hostNodes.GetN (), "ClosTopology: no host " << host);
    return m_hostNodes.Get (host);
}

Ptr<FabricNetDevice>
ClosTopology::GetHostDevice (uint32_t host) const
{
    NS_ABORT_MSG_IF (host >= m_hostDevices.size (), "ClosTopology: no host " << host);
    return m_hostDevices[host];
}

NodeContainer
ClosTopology::GetHosts () const
{
    return m_hostNodes;
}

Ptr<FabricSwitch>
ClosTopology::GetTor (uint32_t rack) const
{
    return m_tors.at (rack);
}

Ptr<FabricSwitch>
ClosTopology::GetSpine (uint32_t spine) const
{
    return m_spineSwitches.at (spine);
}

std::vector<Ptr<FabricNetDevice>>
ClosTopology::GetSwitchPorts () const
{
    std::vector<Ptr<FabricNetDevice>> ports;
    for (const auto& sw : m_tors)
    {
        for (uint32_t i = 0; i < sw->GetNPorts (); ++i)
        {
            ports.push_back (sw->GetPort (i));
        }
    }
    for (const auto& sw : m_spineSwitches)
    {
        for (uint32_t i = 0; i < sw->GetNPorts (); ++i)
        {
            ports.push_back (sw->GetPort (i));
        }
    }
    return ports;
}

Time
ClosTopology::IdealFct (uint32_t srcHost, uint32_t dstHost, uint64_t sizeBytes,
                        uint32_t perPacketHeaderBytes, uint32_t mssBytes) const
{
    NS_ABORT_MSG_IF (srcHost >= GetNHosts () || dstHost >= GetNHosts (),
                     "ClosTopology::IdealFct: host out of range (" << srcHost << ", " << dstHost
                                                                   << ")");
    NS_ABORT_MSG_IF (mssBytes == 0, "ClosTopology::IdealFct: mssBytes is 0");
    const uint64_t accessBps = m_accessRate.GetBitRate ();
    const uint64_t spineBps = accessBps * m_spineRateFactor;
    const uint32_t overhead = perPacketHeaderBytes + kFabricHeaderBytes;
    uint64_t fullPackets = sizeBytes / mssBytes;
    uint64_t lastPayload = sizeBytes % mssBytes;
    if (sizeBytes == 0)
    {
        lastPayload = 0; // one header-only packet
    }
    bool hasLast = lastPayload != 0 || sizeBytes == 0;

    auto txPs = [] (uint64_t bytes, uint64_t bps)
    { return FabricNetDevice::TxTimeFor (bytes, bps).GetPicoSeconds (); };
    const int64_t fullTx = txPs (mssBytes + overhead, accessBps);
    const int64_t lastTx = txPs (lastPayload + overhead, accessBps);
    int64_t ps = fullTx * static_cast<int64_t> (fullPackets) + (hasLast ? lastTx : 0);
    const int64_t intraPs = GetIntraRackDelay ().GetPicoSeconds ();
    const int64_t interPs = GetInterRackDelay ().GetPicoSeconds ();
    const int64_t switchPs = m_switchingDelay.GetPicoSeconds ();
    if (GetRackOfHost (srcHost) == GetRackOfHost (dstHost))
    {
        return PicoSeconds (ps + 2 * intraPs + switchPs);
    }
    // Re-serialization of the largest packet (see the class doc and clos.md).
    int64_t reserialization = 0;
    if (fullPackets > 0)
    {
        reserialization = fullTx - txPs (mssBytes + overhead, spineBps);
    }
    if (hasLast)
    {
        reserialization =
            std::max (reserialization, lastTx - txPs (lastPayload + overhead, spineBps));
    }
    return PicoSeconds (ps + 2 * intraPs + 2 * interPs + 3 * switchPs + reserialization);
}

int64_t
ClosTopology::IdealFctNs (uint32_t srcHost, uint32_t dstHost, uint64_t sizeBytes,
                          uint32_t perPacketHeaderBytes, uint32_t mssBytes) const
{
    Time ideal = IdealFct (srcHost, dstHost, sizeBytes, perPacketHeaderBytes, mssBytes);
    return (ideal.GetPicoSeconds () + 500) / 1000;
}

Time
ClosTopology::BaseRtt (uint32_t perPacketHeaderBytes, uint32_t mssBytes) const
{
    NS_ABORT_MSG_IF (GetNHosts () < 2, "ClosTopology::BaseRtt: fewer than 2 hosts");
    const uint32_t src = 0;
    const uint32_t dst = m_racks > 1 ? m_hostsPerRack : 1;
    return IdealFct (src, dst, mssBytes, perPacketHeaderBytes, mssBytes) +
           IdealFct (dst, src, 0, perPacketHeaderBytes, mssBytes);
}

double
ClosTopology::BdpBytes (uint32_t perPacketHeaderBytes, uint32_t mssBytes) const
{
    return static_cast<double> (m_accessRate.GetBitRate ()) *
           BaseRtt (perPacketHeaderBytes, mssBytes).GetSeconds () / 8.0;
}

uint32_t
ClosTopology::SwitchPortBytes () const
{
    return m_fabric == LOSSLESS ? 0 : m_bufferBytes; // lossless: only the MMU limits
}

std::vector<Ptr<FabricSwitch>>
ClosTopology::GetSwitches () const
{
    std::vector<Ptr<FabricSwitch>> switches (m_tors);
    switches.insert (switches.end (), m_spineSwitches.begin (), m_spineSwitches.end ());
    return switches;
}

uint64_t
ClosTopology::GetSwitchPortDrops () const
{
    uint64_t drops = 0;
    for (const Ptr<FabricNetDevice>& port : GetSwitchPorts ())
    {
        drops += port->GetQueue ()->GetDroppedPackets ();
    }
    return drops;
}

uint64_t
ClosTopology::GetHostNicDrops () const
{
    uint64_t drops = 0;
    for (const Ptr<FabricNetDevice>& device : m_hostDevices)
    {
        drops += device->GetQueue ()->GetDroppedPackets ();
    }
    return drops;
}

uint32_t
ClosTopology::AttachToTor (uint32_t rack, Ptr<Node> node, DataRate rate, Time delay)
{
    NS_ABORT_MSG_IF (!m_built, "ClosTopology::AttachToTor: call after Build()");
    NS_ABORT_MSG_IF (rack >= m_racks, "ClosTopology::AttachToTor: no rack " << rack);
    const uint32_t endpoint = GetNHosts () + GetNAttached ();
    NS_ABORT_MSG_IF (endpoint > 65535, "ClosTopology::AttachToTor: at most 65536 endpoints");
    Ptr<FabricNetDevice> device = CreateObject<FabricNetDevice> ();
    device->SetDataRate (rate);
    Ptr<FabricQueue> nicQueue = m_hostQueueFactory.Create<FabricQueue> ();
    nicQueue->SetMaxBytes (0);
    device->SetQueue (nicQueue);
    node->AddDevice (device);
    Ptr<FabricNetDevice> torPort = CreateObject<FabricNetDevice> ();
    torPort->SetDataRate (rate);
    Ptr<FabricQueue> portQueue = m_switchQueueFactory.Create<FabricQueue> ();
    portQueue->SetMaxBytes (SwitchPortBytes ());
    torPort->SetQueue (portQueue);
    m_switchNodes.Get (rack)->AddDevice (torPort);
    Ptr<FabricChannel> channel = CreateObject<FabricChannel> ();
    channel->SetAttribute ("Delay", TimeValue (delay));
    device->Attach (channel);
    torPort->Attach (channel);
    const uint32_t port = m_tors[rack]->AddPort (torPort);
    std::vector<uint32_t> uplinks;
    for (uint32_t s = 0; s < m_spines; ++s)
    {
        uplinks.push_back (m_hostsPerRack + s);
    }
    for (uint32_t r = 0; r < m_racks; ++r)
    {
        if (r == rack)
        {
            m_tors[r]->SetRoute (endpoint, {port});
        }
        else
        {
            m_tors[r]->SetRoute (endpoint, uplinks);
        }
    }
    for (uint32_t s = 0; s < m_spines; ++s)
    {
        m_spineSwitches[s]->SetRoute (endpoint, {rack});
    }
    m_attachedDevices.push_back (device);
    NS_LOG_INFO ("endpoint " << endpoint << " attached to ToR " << rack << " port " << port);
    return endpoint;
}

Ptr<FabricNetDevice>
ClosTopology::GetAttachedDevice (uint32_t endpoint) const
{
    NS_ABORT_MSG_IF (endpoint < GetNHosts () ||
                         endpoint - GetNHosts () >= m_attachedDevices.size (),
                     "ClosTopology: no attached endpoint " << endpoint);
    return m_attachedDevices[endpoint - GetNHosts ()];
}

} // namespace ns3
