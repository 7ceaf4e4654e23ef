/*
 * disaggsim: pHost as a FlowTransport over the Clos fabric (protocol name "phost").
 */
#ifndef DISAGGSIM_PHOST_HELPER_H
#define DISAGGSIM_PHOST_HELPER_H

#include "topologies/model/flow-start-scheduler.h"
#include "topologies/model/flow-transport.h"
#include "transports/phost/model/phost-host.h"
#include "transports/phost/model/phost-params.h"

#include <vector>

namespace ns3
{

/**
 * \brief Installs pHost (Gao et al. CoNEXT'15) on a ClosTopology (transports/phost/doc/phost.md).
 *
 * - ConfigureFabric: every switch port and host NIC gets a StrictPriorityQueue
 *   (topologies/model) with Classes = PriorityLevels strict levels; switch ports take
 *   ClosTopology::BufferBytes (36864 B), host NICs
 *   ClosTopology::HostBufferBytes (0 = unlimited: the host never drops its own packets).
 *   Parameters left at 0 are derived from the topology (doc §4): with T = wire time of a
 *   full data packet at the access rate and rtt = ClosTopology::BaseRtt,
 *   TokenExpiry = 1.5 T, DowngradeTokens =
 *   inter-rack FreeTokens + 2, DowngradeTime = 3 rtt, RetransmissionTimeout = 3 rtt.
 *   InFlightWindow = inter-rack FreeTokens + 2, counted over the last 3 rtt.
 *   FreeTokens is one BDP of the flow's own path: ceil(rtt_path / T) with rtt_path the
 *   ideal time of a full packet there and a 40 B token back (intra- or inter-rack).
 * - Install: a PhostHost on every host's port (no IPv4 stack).
 * - AddFlow: each flow starts at its start time (FlowStartScheduler, no warm-up).
 * - FlowFinished fires when the destination has every packet (FCT_RECORDS finish_ns).
 */
class PhostFlowTransport : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    PhostFlowTransport ();
    ~PhostFlowTransport () override;

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    /// tokens_sent, tokens_reissued (loss recovery), tokens_expired, downgrades,
    /// rts_resent, data_packets_sent, duplicate_data_packets, summed over hosts.
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;

    /// Resolved parameters (valid after ConfigureFabric).
    const PhostParams& GetParams () const
    {
        return m_params;
    }

    Time GetBaseRtt () const
    {
        return m_baseRtt;
    }

    /// \returns the pHost stack of host \p host (after Install).
    Ptr<PhostHost> GetHostStack (uint32_t host) const
    {
        return m_hosts.at (host);
    }

  protected:
    void DoDispose () override;
    void DoAddFlow (const FlowSpec& flow) override;

  private:
    void StartFlow (const FlowSpec& flow);
    void OnFinished (uint64_t flowId);

    // Attributes (0 = derived, see the class doc).
    uint32_t m_mssBytes{1460};
    uint32_t m_freeTokens{0};
    Time m_tokenExpiry;
    uint32_t m_downgradeTokens{0};
    Time m_downgradeTime;
    Time m_retransmissionTimeout;
    uint32_t m_priorityLevels{2};
    uint32_t m_inFlightWindow{0};
    bool m_grantAfterFirstData{true};

    PhostParams m_params;
    Time m_baseRtt;
    Ptr<ClosTopology> m_topology;
    std::vector<Ptr<PhostHost>> m_hosts;
    std::vector<FlowSpec> m_flows;
    FlowStartScheduler m_starts;
};

} // namespace ns3

#endif // DISAGGSIM_PHOST_HELPER_H
