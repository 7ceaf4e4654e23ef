/*
 * disaggsim: the two-tier Clos (leaf-spine) fabric of Gao et al. OSDI'16 §4.2.
 */
#ifndef DISAGGSIM_CLOS_TOPOLOGY_H
#define DISAGGSIM_CLOS_TOPOLOGY_H

#include "fabric-net-device.h"
#include "fabric-switch.h"
#include "pfc-monitor.h"

#include "ns3/data-rate.h"
#include "ns3/node-container.h"
#include "ns3/object-factory.h"
#include "ns3/object.h"

#include <vector>

namespace ns3
{

/**
 * \brief racks × hostsPerRack hosts, one ToR per rack, `spines` spine switches; every ToR
 * connects to every spine (full bisection bandwidth when spines × spineRateFactor =
 * hostsPerRack).  Defaults are the paper's (Gao et al. OSDI'16 §4.2 and Table 4): 9 racks ×
 * 16 hosts, 4 spines, 40 Gbps access links, ToR-spine links 4× faster, 36 KB buffer per
 * switch port, 0.24 us cut-through switching, 4 m intra-rack and 40 m inter-rack cables at
 * 5 ns/m.
 *
 * Hosts are numbered rack-major: host = rack * hostsPerRack + index.  Host i has IPv4
 * address 10.0.0.1 + i (FabricHostIpv4Address) once a transport installs an IP stack.
 * Egress queues come from two ObjectFactory seams set by the transport before Build():
 * SetSwitchQueue (every switch port; MaxBytes forced to BufferBytes) and SetHostQueue
 * (host NICs; MaxBytes forced to HostBufferBytes, 0 = unlimited).
 */
class ClosTopology : public Object
{
  public:
    /// The fabric's loss model (attribute Fabric).
    enum Fabric
    {
        LOSSY,   //!< per-port drop-tail buffers (BufferBytes); the default
        LOSSLESS //!< a SwitchMmu per switch: shared buffer, PFC, RED-ECN
    };

    static TypeId GetTypeId ();
    ClosTopology ();
    ~ClosTopology () override;

    /// Queue type (and attributes) for every switch port.  Default ns3::DropTailEcnQueue.
    void SetSwitchQueue (const ObjectFactory& factory);
    /// Queue type (and attributes) for every host NIC.  Default ns3::DropTailEcnQueue.
    void SetHostQueue (const ObjectFactory& factory);

    /// Create nodes, ports, cables, queues and switch tables.  Call once.
    void Build ();

    uint32_t GetNRacks () const
    {
        return m_racks;
    }

    uint32_t GetHostsPerRack () const
    {
        return m_hostsPerRack;
    }

    uint32_t GetNSpines () const
    {
        return m_spines;
    }

    uint32_t GetNHosts () const
    {
        return m_racks * m_hostsPerRack;
    }

    uint32_t GetRackOfHost (uint32_t host) const
    {
        return host / m_hostsPerRack;
    }

    DataRate GetAccessRate () const
    {
        return m_accessRate;
    }

    /// \returns the ToR-spine link rate (spineRateFactor × access rate).
    DataRate GetSpineRate () const;

    Time GetSwitchingDelay () const
    {
        return m_switchingDelay;
    }

    /// \returns the propagation delay of a host-ToR cable: HostLinkDelay if it is set (>= 0),
    /// else IntraRackCableM x PropagationPerM.  The cables and IdealFct both read it.
    Time GetIntraRackDelay () const;
    /// \returns the propagation delay of a ToR-spine cable: SpineLinkDelay if it is set
    /// (>= 0), else InterRackCableM x PropagationPerM.  The cables and IdealFct both read it.
    Time GetInterRackDelay () const;

    Ptr<Node> GetHost (uint32_t host) const;
    Ptr<FabricNetDevice> GetHostDevice (uint32_t host) const;
    NodeContainer GetHosts () const;
    Ptr<FabricSwitch> GetTor (uint32_t rack) const;
    Ptr<FabricSwitch> GetSpine (uint32_t spine) const;
    /// \returns every switch port (ToRs first, then spines).
    std::vector<Ptr<FabricNetDevice>> GetSwitchPorts () const;

    /**
     * \returns the FCT of a flow alone in the network, with exactly the pipelining of the
     * model (FabricNetDevice + FabricSwitch timing): the flow is cut into ceil(size / mss)
     * packets (at least one), each of payload + perPacketHeaderBytes + 18 B on the wire, sent
     * back to back at the access rate R.  Intra-rack (2 links, 1 switch):
     *   sum_k T_R(b_k) + 2 d_intra + s
     * Inter-rack (4 links, 3 switches):
     *   sum_k T_R(b_k) + 2 d_intra + 2 d_inter + 3 s + max_k [T_R(b_k) - T_fR(b_k)]
     * where T_x(b) = ceil(8 b / x) ps, s = switching delay and f = spineRateFactor.  The last
     * term is the re-serialization of the largest packet: the ToR must hold a packet until
     * its tail arrives before sending it 4× faster towards the spine (no underrun), and the
     * destination ToR sends it back out at R.  Derivation: topologies/doc/clos.md.
     * \throws via NS_ABORT if a host index is out of range or mssBytes is 0.
     */
    Time IdealFct (uint32_t srcHost, uint32_t dstHost, uint64_t sizeBytes,
                   uint32_t perPacketHeaderBytes, uint32_t mssBytes) const;

    /// IdealFct in ns, rounded to the nearest ns.
    int64_t IdealFctNs (uint32_t srcHost, uint32_t dstHost, uint64_t sizeBytes,
                        uint32_t perPacketHeaderBytes, uint32_t mssBytes) const;

    /**
     * \returns the base round trip every transport sizes its window or timers from: the
     * IdealFct of one full data packet (\p mssBytes payload) from host 0 to the farthest
     * host (host HostsPerRack, the first of rack 1; host 1 in a one-rack fabric) plus the
     * IdealFct of a header-only control packet (ACK, token) back (topologies/doc/clos.md, "Base
     * RTT"). \throws via NS_ABORT if the fabric has fewer than 2 hosts or mssBytes is 0.
     */
    Time BaseRtt (uint32_t perPacketHeaderBytes, uint32_t mssBytes) const;
    /// \returns BaseRtt x access rate, in bytes (the bandwidth-delay product).
    double BdpBytes (uint32_t perPacketHeaderBytes, uint32_t mssBytes) const;
    /// \returns the frames dropped at every switch port (FabricQueue::GetDroppedPackets).
    uint64_t GetSwitchPortDrops () const;
    /// \returns the frames dropped at every host NIC queue.
    uint64_t GetHostNicDrops () const;

    /// \returns the fabric's loss model.
    Fabric GetFabric () const
    {
        return m_fabric;
    }

    /// \returns the lossless fabric's PFC monitor (pause chains, deadlocks); nullptr if lossy.
    Ptr<PfcMonitor> GetPfcMonitor () const
    {
        return m_pfcMonitor;
    }

    /// \returns every switch (ToRs first, then spines).
    std::vector<Ptr<FabricSwitch>> GetSwitches () const;

    /**
     * \brief The transport seam for extra nodes (FlowTransport::Install, after Build): attach
     * \p node to a new port of the ToR of \p rack, like a host (a FabricNetDevice at \p rate
     * on \p node, a switch-queue port on the ToR, a cable of \p delay), e.g. the Fastpass
     * arbiter.  The node becomes fabric endpoint GetNHosts() + i (the i-th attachment): every
     * ToR and spine gets a route to it (its ToR: the new port; other ToRs: every uplink;
     * spines: the port to \p rack), so FabricHeader::dstHost = that id reaches it.  Its NIC
     * queue comes from SetHostQueue's factory, unlimited (MaxBytes 0).
     * \returns the endpoint id.  \throws via NS_ABORT if called before Build, rack is out of
     * range or the ids would exceed 16 bits.
     */
    uint32_t AttachToTor (uint32_t rack, Ptr<Node> node, DataRate rate, Time delay);
    /// \returns the number of AttachToTor endpoints.
    uint32_t GetNAttached () const
    {
        return static_cast<uint32_t> (m_attachedDevices.size ());
    }
    /// \returns the device of endpoint \p endpoint (GetNHosts() <= endpoint < GetNHosts() +
    /// GetNAttached()).
    Ptr<FabricNetDevice> GetAttachedDevice (uint32_t endpoint) const;

  private:
    /// Egress queue limit of a switch port: BufferBytes (lossy) or 0 (lossless: the MMU).
    uint32_t SwitchPortBytes () const;

    uint32_t m_racks{9};
    uint32_t m_hostsPerRack{16};
    uint32_t m_spines{4};
    DataRate m_accessRate;
    uint32_t m_spineRateFactor{4};
    uint32_t m_bufferBytes{36864};
    Fabric m_fabric{LOSSY};
    Ptr<PfcMonitor> m_pfcMonitor;
    uint64_t m_losslessBufferBytes{0};
    uint32_t m_hostBufferBytes{0};
    Time m_switchingDelay;
    double m_intraRackCableM{4};
    double m_interRackCableM{40};
    Time m_propagationPerM;
    Time m_hostLinkDelay;  //!< explicit host-ToR delay (negative: from the cable length)
    Time m_spineLinkDelay; //!< explicit ToR-spine delay (negative: from the cable length)
    uint32_t m_ecmpSalt{0};

    bool m_built{false};
    ObjectFactory m_switchQueueFactory;
    ObjectFactory m_hostQueueFactory;
    NodeContainer m_hostNodes;
    NodeContainer m_switchNodes;
    std::vector<Ptr<FabricNetDevice>> m_hostDevices;
    std::vector<Ptr<FabricSwitch>> m_tors;
    std::vector<Ptr<FabricSwitch>> m_spineSwitches;
    std::vector<Ptr<FabricNetDevice>> m_attachedDevices;
};

} // namespace ns3

#endif // DISAGGSIM_CLOS_TOPOLOGY_H
