/*
 * disaggsim: transport plug-in interface and registry.
 */
#include "flow-transport.h"

#include "ns3/abort.h"
#include "ns3/simulator.h"
#include "ns3/trace-source-accessor.h"

#include <algorithm>

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

std::vector<std::pair<std::string, std::string>>
FlowTransport::GetStatistics () const
{
    return {};
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
    NS_ABORT_MSG_IF (Find (entry.name) != nullptr,
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
