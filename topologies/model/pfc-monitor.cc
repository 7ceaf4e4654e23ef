/*
 * disaggsim: watches a lossless fabric's pauses: pause chains and deadlocks.
 */
#include "pfc-monitor.h"

#include "clos-topology.h"
#include "fabric-channel.h"
#include "fabric-switch.h"
#include "switch-mmu.h"

#include "ns3/log.h"
#include "ns3/node.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <iostream>
#include <sstream>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE ("PfcMonitor");
NS_OBJECT_ENSURE_REGISTERED (PfcMonitor);

TypeId
PfcMonitor::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::PfcMonitor")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddConstructor<PfcMonitor> ()
            .AddAttribute ("DeadlockTimeout",
                           "A lossless fabric in which no port transmits for this long while "
                           "frames wait in paused ports is deadlocked: the run stops and says "
                           "which port waits on which (1 ms: over 1,000 times the fabric's "
                           "base RTT, so a slow drain is never mistaken for a deadlock)",
                           TimeValue (MilliSeconds (1)),
                           MakeTimeAccessor (&PfcMonitor::m_timeout),
                           MakeTimeChecker (PicoSeconds (1)));
    return tid;
}

PfcMonitor::PfcMonitor () = default;

PfcMonitor::~PfcMonitor () = default;

void
PfcMonitor::DoDispose ()
{
    m_check.Cancel ();
    m_ports.clear ();
    m_switches.clear ();
    m_chain.clear ();
    Object::DoDispose ();
}

void
PfcMonitor::Watch (Ptr<ClosTopology> topology)
{
    for (uint32_t h = 0; h < topology->GetNHosts (); ++h)
    {
        m_ports.push_back (topology->GetHostDevice (h));
    }
    for (const Ptr<FabricNetDevice>& port : topology->GetSwitchPorts ())
    {
        m_ports.push_back (port);
    }
    m_switches = topology->GetSwitches ();
    for (const Ptr<FabricNetDevice>& port : m_ports)
    {
        port->TraceConnectWithoutContext (
            "PfcRx", MakeCallback (&PfcMonitor::PfcReceived, this).Bind (PeekPointer (port)));
    }
}

FabricNetDevice*
PfcMonitor::Peer (const FabricNetDevice* port)
{
    Ptr<Channel> channel = port->GetChannel ();
    for (std::size_t i = 0; i < channel->GetNDevices (); ++i)
    {
        Ptr<NetDevice> device = channel->GetDevice (i);
        if (PeekPointer (device) != port)
        {
            return static_cast<FabricNetDevice*> (PeekPointer (device));
        }
    }
    return nullptr;
}

std::string
PfcMonitor::PortName (const FabricNetDevice* port)
{
    std::ostringstream name;
    if (port->GetSwitchPortIndex () == kFabricNoIngressPort)
    {
        name << "host node " << port->GetNodeId ();
    }
    else
    {
        name << "switch node " << port->GetNodeId () << " port " << port->GetSwitchPortIndex ();
    }
    return name.str ();
}

void
PfcMonitor::PfcReceived (FabricNetDevice* port, uint8_t classEnable, uint16_t quanta)
{
    if (quanta == 0)
    {
        m_chain.erase (port);
        return;
    }
    // The switch at the other end paused us: extend the longest chain of its paused ports.
    uint32_t chain = 1;
    const FabricNetDevice* peer = Peer (port);
    Ptr<FabricSwitch> sw = peer != nullptr ? peer->GetNode ()->GetObject<FabricSwitch> () : nullptr;
    if (sw)
    {
        for (uint32_t i = 0; i < sw->GetNPorts (); ++i)
        {
            const FabricNetDevice* egress = PeekPointer (sw->GetPort (i));
            auto it = m_chain.find (egress);
            if (it != m_chain.end () && (egress->GetPausedClasses () & classEnable) != 0)
            {
                chain = std::max (chain, it->second + 1);
            }
        }
    }
    m_chain[port] = chain;
    m_longestChain = std::max (m_longestChain, chain);
    if (!m_check.IsRunning ())
    {
        m_lastTx = TransmittedFrames ();
        m_check = Simulator::Schedule (m_timeout, &PfcMonitor::Check, this);
    }
}

uint64_t
PfcMonitor::TransmittedFrames () const
{
    uint64_t frames = 0;
    for (const Ptr<FabricNetDevice>& port : m_ports)
    {
        frames += port->GetTxPackets () - port->GetPfcFramesSent (); // pauses are no progress
    }
    return frames;
}

void
PfcMonitor::Check ()
{
    std::ostringstream report;
    bool waiting = false;
    for (const Ptr<FabricNetDevice>& port : m_ports)
    {
        if (!port->GetQueue ()->IsEmpty () && port->GetPausedClasses () != 0)
        {
            waiting = true;
            report << PortName (PeekPointer (port)) << " (paused classes 0x" << std::hex
                   << uint32_t (port->GetPausedClasses ()) << std::dec << ", "
                   << port->GetQueue ()->GetNPackets () << " frames) waits on "
                   << PortName (Peer (PeekPointer (port))) << "\n";
        }
    }
    if (!waiting)
    {
        return; // nothing waits: re-armed by the next pause
    }
    const uint64_t tx = TransmittedFrames ();
    if (tx == m_lastTx)
    {
        for (const Ptr<FabricSwitch>& sw : m_switches)
        {
            Ptr<SwitchMmu> mmu = DynamicCast<SwitchMmu> (sw->GetSharedBuffer ());
            for (uint32_t i = 0; mmu && i < sw->GetNPorts (); ++i)
            {
                for (uint8_t c = 0; c < kFabricTrafficClasses; ++c)
                {
                    if (mmu->IsPausing (i, c))
                    {
                        report << PortName (PeekPointer (sw->GetPort (i))) << " pauses class "
                               << uint32_t (c) << " upstream holding "
                               << mmu->GetIngressBytes (i, c) << " bytes\n";
                    }
                }
            }
        }
        m_deadlocked = true;
        m_report = report.str ();
        std::cerr << "PFC deadlock at " << Simulator::Now ().GetNanoSeconds ()
                  << " ns: no port transmitted for " << m_timeout.GetNanoSeconds ()
                  << " ns while frames wait:\n"
                  << m_report;
        Simulator::Stop ();
        return;
    }
    m_lastTx = tx;
    m_check = Simulator::Schedule (m_timeout, &PfcMonitor::Check, this);
}

} // namespace ns3
