/*
 * disaggsim: the plug-in interface between the driver and a transport (TCP, DCTCP, pFabric,
 * ...), and the name -> transport registry.
 */
#ifndef DISAGGSIM_FLOW_TRANSPORT_H
#define DISAGGSIM_FLOW_TRANSPORT_H

#include "clos-topology.h"

#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/traced-callback.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \brief One flow of the SIM_FLOWS table (disaggsim/schemas.py): sizeBytes from srcHost to
 * dstHost, starting at startNs of trace time.
 */
struct FlowSpec
{
    uint64_t flowId{0};
    int64_t startNs{0};
    uint32_t srcHost{0};
    uint32_t dstHost{0};
    uint64_t sizeBytes{0};
};

/**
 * \brief A transport that carries flows across a ClosTopology.  The driver calls, in order:
 * ConfigureFabric (before Build: choose port queues through ClosTopology::SetSwitchQueue /
 * SetHostQueue), Install (after Build: host stacks, and any node of the transport's own: a
 * transport that needs a node on the fabric, such as Fastpass's arbiter, creates it in
 * Install and attaches it with ClosTopology::AttachToTor, which gives it a port on a ToR, a
 * cable and an endpoint id routed by every switch), AddFlow for every flow, then runs the
 * simulator.  Completions are reported through the "FlowFinished" trace source with the
 * flow id and the simulation time the receiver got the last byte.  Trace time t is
 * simulation time GetTraceOrigin() + t (a transport may need a warm-up, e.g. to open
 * connections before the first flow).
 */
class FlowTransport : public Object
{
  public:
    static TypeId GetTypeId ();
    FlowTransport ();
    ~FlowTransport () override;

    virtual void ConfigureFabric (Ptr<ClosTopology> topology) = 0;
    /// Build the host stacks; the base keeps \p topology for AddFlow's validation.
    virtual void Install (Ptr<ClosTopology> topology) = 0;
    /**
     * Check \p flow against the topology given to Install (ValidateFlow), then hand it to
     * DoAddFlow.  The one validation path of every transport.
     * \throws std::invalid_argument naming the flow id and the bad field if the flow has a
     * host out of range, srcHost == dstHost or sizeBytes == 0; std::logic_error if called
     * before Install.
     */
    void AddFlow (const FlowSpec& flow);
    /// \returns "" if \p flow is valid on a fabric of \p nHosts hosts, else the reason.
    static std::string ValidateFlow (const FlowSpec& flow, uint32_t nHosts);

    /// \returns the bytes each data packet carries above the 18 B frame header (e.g. 40 B of
    /// IPv4 + TCP headers); used for the ideal FCT.
    virtual uint32_t GetPerPacketHeaderBytes () const = 0;
    /// \returns the largest payload of a data packet in bytes; used for the ideal FCT.
    virtual uint32_t GetMssBytes () const = 0;
    /// \returns the simulation time of trace time 0.
    virtual Time GetTraceOrigin () const;
    /// \returns the TypeIds whose attribute values define this transport (for the resolved
    /// configuration in STATS.json).
    virtual std::vector<TypeId> GetConfigTypeIds () const;
    /// \returns extra resolved parameters (name, value) computed at ConfigureFabric (e.g. the
    /// DCTCP marking threshold derived from the topology).
    virtual std::vector<std::pair<std::string, std::string>> GetDerivedConfig () const;
    /// \returns the transport's own counters after a run (name, value), for STATS.json.
    virtual std::vector<std::pair<std::string, std::string>> GetStatistics () const;
    /**
     * \returns the fixed delay a lone flow \p flow (alone on an idle fabric, started at trace
     * time flow.startNs) takes beyond ClosTopology::IdealFct, the ideal every report divides
     * by: 0 for transports that start at line rate (the default), the request-allocation
     * round trip for a centralized scheduler such as Fastpass.  The conformance suite checks
     * FCT == IdealFct + this value exactly; each transport's own suite derives it by hand.
     */
    virtual Time GetLoneFlowExtraDelay (const FlowSpec& flow) const;

    /// Signature of the FlowFinished trace source.
    typedef void (*FlowFinishedCallback) (uint64_t flowId, Time finish);

  protected:
    /// Fire FlowFinished for \p flowId at the current simulation time.
    void NotifyFlowFinished (uint64_t flowId);
    /// Transport hook: take a validated flow (hosts in range and distinct, size > 0).
    virtual void DoAddFlow (const FlowSpec& flow) = 0;
    /**
     * Set ClosTopology::HostBufferBytes to \p hostBufferBytes, the transport's own attribute
     * \p attribute (before Build).  A user's non-zero ClosTopology::HostBufferBytes that
     * differs is an error, not silently replaced.
     * \throws std::invalid_argument naming both attributes in that case.
     */
    static void ApplyHostBufferBytes (Ptr<ClosTopology> topology, uint32_t hostBufferBytes,
                                      const std::string& attribute);
    /// Record the topology AddFlow validates against (called by each Install).
    void SetFlowTopology (Ptr<const ClosTopology> topology)
    {
        m_flowTopology = topology;
    }
    void DoDispose () override;

  private:
    Ptr<const ClosTopology> m_flowTopology;
    TracedCallback<uint64_t, Time> m_flowFinished;
};

/**
 * \brief Protocol name -> transport.  A transport library registers itself with a static
 * FlowTransportRegistrar, so the driver needs no change for a new transport (its library only
 * has to be linked, which transports/CMakeLists.txt does for every subdirectory).
 */
class FlowTransportRegistry
{
  public:
    struct Entry
    {
        std::string name;
        std::string description;
        /// Config::SetDefault calls for the transport's defaults; run before the command line
        /// is parsed so that --ns3::Class::Attribute=value overrides them.
        std::function<void ()> setDefaults;
        std::function<Ptr<FlowTransport> ()> create;
        /// Attribute that the driver's --mssBytes shorthand sets (e.g.
        /// "ns3::TcpSocket::SegmentSize"); empty if the transport has none.
        std::string mssAttribute;
        /// The name this transport had before a rename (empty: none); the driver accepts it
        /// with a one-line notice and --list-capabilities lists it as "alias FORMER NAME".
        std::string formerName{};
    };

    static void Register (const Entry& entry);
    /// \returns the entry for \p name, or nullptr.
    static const Entry* Find (const std::string& name);
    /// \returns the entry whose Entry::formerName is \p name, or nullptr.
    static const Entry* FindFormer (const std::string& name);
    static std::vector<std::string> GetNames ();

  private:
    static std::vector<Entry>& Entries ();
};

/// Registers an entry at static-initialization time.
struct FlowTransportRegistrar
{
    explicit FlowTransportRegistrar (const FlowTransportRegistry::Entry& entry)
    {
        FlowTransportRegistry::Register (entry);
    }
};

} // namespace ns3

#endif // DISAGGSIM_FLOW_TRANSPORT_H
