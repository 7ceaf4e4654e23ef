/*
 * disaggsim: builds a ClosTopology with a transport installed on it.
 */
#ifndef DISAGGSIM_CLOS_HELPER_H
#define DISAGGSIM_CLOS_HELPER_H

#include "topologies/model/clos-topology.h"
#include "topologies/model/flow-transport.h"

#include "ns3/object-factory.h"

#include <string>

namespace ns3
{

/**
 * \brief Hides the wiring order so that a driver reads like the paper's setup:
 *
 *     ClosHelper clos;
 *     clos.SetTopologyAttribute("AccessRate", DataRateValue(DataRate("100Gbps")));
 *     Ptr<ClosTopology> topology = clos.Install(transport);  // queues, build, host stacks
 *     transport->AddFlow(...);
 *
 * Attributes not set here take their ns-3 defaults (Config::SetDefault or the command line).
 */
class ClosHelper
{
  public:
    ClosHelper ();

    /// Set an attribute of the ns3::ClosTopology to be created.
    void SetTopologyAttribute (const std::string& name, const AttributeValue& value);

    /**
     * Create the topology, let \p transport choose its port queues
     * (FlowTransport::ConfigureFabric), build it, and install the transport's host side
     * (FlowTransport::Install).  \returns the built topology.
     */
    Ptr<ClosTopology> Install (Ptr<FlowTransport> transport) const;

  private:
    ObjectFactory m_topologyFactory;
};

} // namespace ns3

#endif // DISAGGSIM_CLOS_HELPER_H
