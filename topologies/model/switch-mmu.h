/*
 * disaggsim: a switch memory-management unit for a lossless fabric (PFC, RED-ECN).
 */
#ifndef DISAGGSIM_SWITCH_MMU_H
#define DISAGGSIM_SWITCH_MMU_H

#include "fabric-shared-buffer.h"

#include "ns3/data-rate.h"
#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/random-variable-stream.h"
#include "ns3/traced-callback.h"

#include <array>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ns3
{

/**
 * \brief The shared buffer of a lossless switch: per-ingress-port, per-priority accounting
 * and IEEE 802.1Qbb priority flow control, with RED-ECN marking at the egress
 * (topologies/doc/lossless.md has every rule's derivation and every default's source).
 *
 * Accounting (the scheme of HPCC's simulator, SwitchMmu, Li et al. SIGCOMM'19): each
 * (ingress port, class) owns ReserveBytes; above it a frame draws from the shared pool, and a
 * frame that would take the (port, class)'s shared use above the XOFF threshold goes to the
 * port's headroom instead.  The XOFF threshold is XoffBytes if set, else dynamic: Alpha x the
 * free shared pool (SizeBytes - all headroom - all reserves - shared use; Choudhury & Hahne
 * 1998; HPCC's simulator, alpha = 1/8).  An arrival whose headroom is full and whose shared
 * use would pass the threshold is dropped (a lossless fabric with enough headroom never
 * does).
 *
 * PFC: when a (port, class) has headroom bytes or reaches the threshold, the ingress port
 * sends a pause frame of PauseQuanta (XOFF) and repeats it every half pause while it lasts;
 * once its headroom is empty and its shared use is XonOffsetBytes below the threshold (or
 * zero), it sends a pause of 0 quanta (XON).  Headroom per port (HeadroomBytes = 0: derived)
 * covers what arrives after the XOFF decision: the frame that crossed, the frame upstream is
 * sending, the bytes arriving while the pause waits behind the frame this port is sending (a
 * maximum frame's time at the slowest port of the switch: a cut-through port holds a frame
 * from a slower ingress before it starts) + rate x (2 x cable delay + 2 x max (switching
 * delay, pause frame time)) (IEEE 802.1Qbb Annex N's budget for this model).
 *
 * RED-ECN (Floyd & Jacobson 1993; DCQCN, Zhu et al. SIGCOMM'15 §5): an ECN-capable frame
 * arriving at an egress queue holding q bytes is CE-marked with probability 0 (q <= Kmin),
 * Pmax (q - Kmin) / (Kmax - Kmin) (Kmin < q <= Kmax) or 1 (q > Kmax); with EcnAtDequeue,
 * q is what the queue holds behind the frame as it leaves (HPCC's simulator).  Kmin and Kmax
 * hold at every port, or, with EcnReferenceRate set, at that link rate: a port of rate R
 * marks at Kmin R / EcnReferenceRate and Kmax R / EcnReferenceRate (HPCC's simulator sets
 * them per port from its rate: third.cc KMIN_MAP / KMAX_MAP -> SwitchMmu::ConfigEcn).
 */
class SwitchMmu : public FabricSharedBuffer
{
  public:
    static TypeId GetTypeId ();
    SwitchMmu ();
    ~SwitchMmu () override;

    bool Admit (FabricQueueItem& item, const FabricQueue& egress) override;
    void Release (uint32_t ingressPort, uint8_t trafficClass, uint32_t wireBytes) override;
    /// EcnAtDequeue: RED on the bytes \p egress holds behind \p item.
    void OnDequeue (FabricQueueItem& item, const FabricQueue& egress) override;
    void AddPort (FabricNetDevice* port, uint32_t index) override;

    /// \returns the XOFF threshold now, in bytes of shared use per (port, class).
    uint64_t GetXoffThresholdBytes () const;
    /// \returns the bytes not shared: every port's headroom and reserve (one class per port,
    /// as HPCC's simulator counts them).
    uint64_t GetReservedBytes () const
    {
        return m_reservedBytes;
    }

    /// Abort with a message naming \p where unless SizeBytes holds the reserved bytes.
    void CheckSize (const std::string& where) const;

    /// \returns the headroom of ingress port \p port in bytes.
    uint64_t GetHeadroomBytes (uint32_t port) const;
    /// \returns the bytes buffered now for ingress \p port, \p trafficClass (reserve +
    /// shared + headroom).
    uint64_t GetIngressBytes (uint32_t port, uint8_t trafficClass) const;
    /// \returns the largest GetIngressBytes seen for \p port, \p trafficClass.
    uint64_t GetPeakIngressBytes (uint32_t port, uint8_t trafficClass) const;
    /// \returns the largest headroom use seen for \p port, \p trafficClass.
    uint64_t GetPeakHeadroomBytes (uint32_t port, uint8_t trafficClass) const;
    /// \returns true while ingress \p port has paused \p trafficClass upstream.
    bool IsPausing (uint32_t port, uint8_t trafficClass) const;
    /// \returns the frames this MMU refused (headroom exhausted).
    uint64_t GetDroppedPackets () const
    {
        return m_dropped;
    }

    /// \returns the headroom HeadroomBytes = 0 derives for a port of \p bitRate on a switch
    /// whose slowest port runs at \p slowestBitRate (0: this port's rate): 2 x
    /// \p maxFrameBytes + ceil (\p maxFrameBytes x \p bitRate / \p slowestBitRate) +
    /// ceil (\p bitRate x (2 \p cableDelay + 2 max (\p switchingDelay, T (64 B))) / 8).
    static uint64_t DerivedHeadroomBytes (uint64_t bitRate, Time cableDelay, Time switchingDelay,
                                          uint32_t maxFrameBytes, uint64_t slowestBitRate = 0);

    /// \returns the RED Kmin of egress port \p port in bytes (EcnKminBytes, scaled to the
    /// port's rate when EcnReferenceRate is set).
    uint64_t GetEcnKminBytes (uint32_t port) const;
    /// \returns the RED Kmax of egress port \p port in bytes (as GetEcnKminBytes).
    uint64_t GetEcnKmaxBytes (uint32_t port) const;

    /// Signature of the IngressBytes trace source: port, class, bytes now.
    typedef void (*IngressTracedCallback) (uint32_t port, uint8_t trafficClass, uint64_t bytes);

  private:
    /// Accounting of one (ingress port, class).
    struct Ingress
    {
        uint64_t bytes{0};     //!< reserve + shared part
        uint64_t headroom{0};  //!< headroom part
        uint64_t peakBytes{0}; //!< largest bytes + headroom
        uint64_t peakHeadroom{0};
        bool pausing{false};
        EventId refresh; //!< the next XOFF repetition while pausing
    };

    struct Port
    {
        FabricNetDevice* device{nullptr};
        uint64_t headroomBytes{0};
        std::array<Ingress, kFabricTrafficClasses> ingress;
    };

    /// Shared use of \p in: its bytes above the reserve.
    uint64_t SharedUse (const Ingress& in) const
    {
        return in.bytes > m_reserveBytes ? in.bytes - m_reserveBytes : 0;
    }

    void SendXoff (uint32_t port, uint8_t trafficClass);
    void RefreshXoff (uint32_t port, uint8_t trafficClass);
    /// RED: \returns true if an ECT frame is marked at \p egress, which holds \p egressBytes
    /// (ahead of it at arrival, behind it at departure).
    bool RedMarks (uint64_t egressBytes, const FabricQueue& egress);
    /// RED with thresholds \p kminBytes, \p kmaxBytes.
    bool RedMarks (uint64_t egressBytes, uint64_t kminBytes, uint64_t kmaxBytes);
    /// \returns \p bytes at EcnReferenceRate scaled to a port of \p bitRate.
    uint64_t ScaleToRate (uint64_t bytes, uint64_t bitRate) const;
    /// \returns \p bytes at EcnReferenceRate scaled to the rate of port \p port (unscaled
    /// while EcnReferenceRate is 0 or the port is unknown).
    uint64_t ScaleToPort (uint64_t bytes, uint32_t port) const;
    /// (Re)derive every port's headroom (it depends on the slowest port) and the reserve.
    void RecomputeReserved ();

    // attributes
    uint64_t m_xoffBytes{0};
    double m_alpha{0.125};
    uint64_t m_xonOffsetBytes{3072};
    uint64_t m_reserveBytes{4096};
    uint64_t m_headroomBytes{0};
    uint16_t m_pauseQuanta{0xFFFF};
    bool m_ecn{true};
    uint64_t m_kminBytes{5000};
    uint64_t m_kmaxBytes{200000};
    double m_pmax{0.01};
    DataRate m_ecnReferenceRate{0};

    std::vector<Port> m_ports;
    uint64_t m_reservedBytes{0}; //!< all headroom + all reserves (not shareable)
    uint64_t m_sharedUsed{0};
    uint64_t m_dropped{0};
    /// EcnReferenceRate set: each port's egress queue -> its (Kmin, Kmax), from AddPort.
    std::unordered_map<const FabricQueue*, std::pair<uint64_t, uint64_t>> m_redByQueue;
    uint64_t m_lowestKminBytes{0}; //!< the least Kmin of m_redByQueue: no lookup at or below
    Ptr<UniformRandomVariable> m_red; //!< created at the first probabilistic mark decision
    TracedCallback<uint32_t, uint8_t, uint64_t> m_ingressTrace;
};

} // namespace ns3

#endif // DISAGGSIM_SWITCH_MMU_H
