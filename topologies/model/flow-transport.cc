/*
 * disaggsim: transport plug-in interface and registry.
 */
#include "flow-transport.h"

#include "ns3/abort.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"
#include "ns3/uinteger.h"

#include <algorithm>
#include <sstream>

namespace ns3
{

NS_OBJECT_ENSURE_REGISTERED (FlowTransport);

TypeId
FlowTransport::GetTypeId ()
{
    static TypeId tid =
        TypeId ("ns3::FlowTransport")
            .SetParent<Object> ()
            .SetGroupName ("Disaggsim")
            .AddTraceSource ("FlowFinished", "The receiver got the last byte of a flow",
                             MakeTraceSourceAccessor (&FlowTransport::m_flowFinished),
                             "ns3::FlowTransport::FlowFinishedCallback");
    return tid;
}

FlowTransport::FlowTransport () = default;

FlowTransport::~FlowTransport () = default;

Time
FlowTransport::GetTraceOrigin () const
{
    return Time (0);
}

std::vector<TypeId>
FlowTransport::GetConfigTypeIds () const
{
    return {GetInstanceTypeId ()};
}

std::vector<std::pair<std::string, std::string>>
FlowTransport::GetDerivedConfig () const
{
    return {};
}

Time
FlowTransport::GetLoneFlowExtraDelay (const FlowSpec& flow) const
{
    return Time (0);
}

std::vector<std::pair<std::string, std::string>>
FlowTransport::GetStatistics () const
{
    return {};
}

void
FlowTransport::DoDispose ()
{
    m_flowTopology = nullptr;
    Object::DoDispose ();
}

void
FlowTransport::ApplyHostBufferBytes (Ptr<ClosTopology> topology, uint32_t hostBufferBytes,
                                     const std::string& attribute)
{
    UintegerValue current;
    topology->GetAttribute ("HostBufferBytes", current);
    if (current.Get () != 0 && current.Get () != hostBufferBytes)
    {
        throw std::invalid_argument (
            "ns3::ClosTopology::HostBufferBytes=" + std::to_string (current.Get ()) +
            " conflicts with " + attribute + "=" + std::to_string (hostBufferBytes) +
            ", which sets the host NIC buffer of this transport; set " + attribute + " instead");
    }
    topology->SetAttribute ("HostBufferBytes", UintegerValue (hostBufferBytes));
}

std::string
FlowTransport::ValidateFlow (const FlowSpec& flow, uint32_t nHosts)
{
    std::ostringstream why;
    if (flow.srcHost >= nHosts || flow.dstHost >= nHosts)
    {
        why << "flow " << flow.flowId << ": host out of range (" << flow.srcHost << " -> "
            << flow.dstHost << ", the fabric has hosts 0.." << nHosts - 1 << ")";
    }
    else if (flow.srcHost == flow.dstHost)
    {
        why << "flow " << flow.flowId << ": src_host == dst_host (" << flow.srcHost << ")";
    }
    else if (flow.sizeBytes == 0)
    {
        why << "flow " << flow.flowId << ": size_bytes is 0 (expected > 0)";
    }
    return why.str ();
}

void
FlowTransport::AddFlow (const FlowSpec& flow)
{
    if (!m_flowTopology)
    {
        throw std::logic_error (GetInstanceTypeId ().GetName () + ": AddFlow before Install");
    }
    const std::string why = ValidateFlow (flow, m_flowTopology->GetNHosts ());
    if (!why.empty ())
    {
        throw std::invalid_argument (GetInstanceTypeId ().GetName () + ": " + why);
    }
    DoAddFlow (flow);
}

void
FlowTransport::NotifyFlowFinished (uint64_t flowId)
{
    m_flowFinished (flowId, Simulator::Now ());
}

std::vector<FlowTransportRegistry::Entry>&
FlowTransportRegistry::Entries ()
{
    static std::vector<Entry> entries;
    return entries;
}

void
FlowTransportRegistry::Register (const Entry& entry)
{
    NS_ABORT_MSG_IF (Find (entry.name) != nullptr || FindFormer (entry.name) != nullptr ||
                         (!entry.formerName.empty () && Find (entry.formerName) != nullptr),
                     "FlowTransportRegistry: transport '" << entry.name << "' registered twice");
    Entries ().push_back (entry);
}

const FlowTransportRegistry::Entry*
FlowTransportRegistry::Find (const std::string& name)
{
    for (const Entry& entry : Entries ())
    {
        if (entry.name == name)
        {
            return &entry;
        }
    }
    return nullptr;
}

const FlowTransportRegistry::Entry*
FlowTransportRegistry::FindFormer (const std::string& name)
{
    for (const Entry& entry : Entries ())
    {
        if (!entry.formerName.empty () && entry.formerName == name)
        {
            return &entry;
        }
    }
    return nullptr;
}

std::vector<std::string>
FlowTransportRegistry::GetNames ()
{
    std::vector<std::string> names;
    for (const Entry& entry : Entries ())
    {
        names.push_back (entry.name);
    }
    std::sort (names.begin (), names.end ());
    return names;
}

} // namespace ns3
