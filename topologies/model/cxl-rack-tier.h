/*
 * disaggsim: a CXL memory pool in every rack and RDMA between racks through one daemon per
 * rack, after Rcmp (Wang et al., ACM TACO 2024, papers/003; topologies/doc/cxl.md).
 */
#ifndef DISAGGSIM_CXL_RACK_TIER_H
#define DISAGGSIM_CXL_RACK_TIER_H

#include "flow-transport.h"

#include "ns3/data-rate.h"
#include "ns3/nstime.h"

#include <map>
#include <vector>

namespace ns3
{

/**
 * \brief A FlowTransport that serves memory accesses from a per-rack CXL pool and carries
 * the inter-rack ones over an inner transport between the racks' daemons (Rcmp §4.2 method
 * (b), §5.1, Fig. 9).  Each flow (SIM_FLOWS row) is one access moving sizeBytes from
 * srcHost's side to dstHost's side:
 *
 * - same rack: the pool serves it over the client's CXL link, never the Ethernet fabric:
 *   it completes LoadStoreLatency + T_cxl(size) after its start, where T_cxl(b) =
 *   ceil(8 b / LinkRate) ps; accesses of one host share its link in start order (the
 *   transfer waits for the link, then the load/store latency follows);
 * - another rack: the data goes through the source rack's pool (the ring buffer between a
 *   compute node and its daemon, §5.2: one CXL access, L + T_cxl), the daemon processes it
 *   (DaemonDelay), the inner transport carries it from daemon to daemon (host
 *   DaemonHostIndex of each rack), the remote daemon processes it (DaemonDelay) and stores
 *   it in its pool (one CXL access).  A lone access takes
 *   2 (L + T_cxl(size) + DaemonDelay) + the inner transport's lone FCT between the daemons;
 *   the inner flow starts at the access's start plus the first CXL access and daemon delay,
 *   rounded up to the ns (the flow table's resolution).
 *
 * Defaults are the paper's: LoadStoreLatency 140 ns (the NUMA emulation of CXL memory
 * measured 138.5 and 141.1 ns, §6.2; CXL is 90-150 ns, §2.3 and Table 2); LinkRate 256 Gbps
 * (PCIe 5.0, §2.3: 32 GT/s per lane; the x8 width is an assumption, the paper gives none);
 * DaemonDelay 0 (not given).
 */
class CxlRackTier : public FlowTransport
{
  public:
    static TypeId GetTypeId ();
    CxlRackTier ();
    ~CxlRackTier () override;

    /// The transport that carries daemon-to-daemon flows.  Call before ConfigureFabric.
    void SetInnerTransport (Ptr<FlowTransport> inner);
    Ptr<FlowTransport> GetInnerTransport () const
    {
        return m_inner;
    }

    /// \returns the Enabled attribute: whether a driver should use the tier.
    bool IsEnabled () const
    {
        return m_enabled;
    }

    void ConfigureFabric (Ptr<ClosTopology> topology) override;
    void Install (Ptr<ClosTopology> topology) override;
    uint32_t GetPerPacketHeaderBytes () const override;
    uint32_t GetMssBytes () const override;
    Time GetTraceOrigin () const override;
    std::vector<TypeId> GetConfigTypeIds () const override;
    std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const override;
    std::vector<std::pair<std::string, std::string>> GetStatistics () const override;

    /// \returns T_cxl(sizeBytes): the transfer time of sizeBytes on one CXL link.
    Time CxlTransferTime (uint64_t sizeBytes) const;
    /// \returns the time of one CXL access of sizeBytes alone: LoadStoreLatency + T_cxl.
    Time CxlAccessTime (uint64_t sizeBytes) const;
    /// \returns the daemon host of \p rack.
    uint32_t GetDaemonHost (uint32_t rack) const;
    /**
     * \returns the time \p flow takes alone: CxlAccessTime in-rack; across racks
     * 2 (CxlAccessTime + DaemonDelay) + the ideal FCT between the daemons + the inner
     * transport's lone-flow extra delay (with the inner start rounded up to the ns).
     */
    Time LoneAccessTime (const FlowSpec& flow) const;
    Time GetLoneFlowExtraDelay (const FlowSpec& flow) const override;

  protected:
    void DoAddFlow (const FlowSpec& flow) override;
    void DoDispose () override;

  private:
    /// The inner transport's daemon flow \p flowId finished: store it in the remote pool.
    void OnInnerFinished (uint64_t flowId, Time finish);
    /// Start of the run: schedule the intra-rack completions (link FIFO per host).
    void ServeIntraRack ();
    /// The inner flow's start offset after the access's start (ns, rounded up).
    int64_t IngressNs (uint64_t sizeBytes) const;

    Ptr<FlowTransport> m_inner;
    Ptr<ClosTopology> m_topology;
    Time m_latency;
    DataRate m_linkRate;
    Time m_daemonDelay;
    uint32_t m_daemonIndex{0};
    bool m_enabled{false};
    std::vector<FlowSpec> m_intraRack;
    std::map<uint64_t, uint64_t> m_interRackSize; //!< inner flow id -> bytes
    bool m_serveScheduled{false};
    uint64_t m_cxlAccesses{0};
    uint64_t m_cxlBytes{0};
    uint64_t m_interRackAccesses{0};
    uint64_t m_interRackBytes{0};
};

} // namespace ns3

#endif // DISAGGSIM_CXL_RACK_TIER_H
