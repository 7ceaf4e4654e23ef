/*
 * disaggsim: builds a ClosTopology with a transport installed on it.
 */
#include "clos-helper.h"

namespace ns3
{

ClosHelper::ClosHelper ()
{
    m_topologyFactory.SetTypeId (ClosTopology::GetTypeId ());
}

void
ClosHelper::SetTopologyAttribute (const std::string& name, const AttributeValue& value)
{
    m_topologyFactory.Set (name, value);
}

Ptr<ClosTopology>
ClosHelper::Install (Ptr<FlowTransport> transport) const
{
    Ptr<ClosTopology> topology = m_topologyFactory.Create<ClosTopology> ();
    transport->ConfigureFabric (topology);
    topology->Build ();
    transport->Install (topology);
    return topology;
}

} // namespace ns3
