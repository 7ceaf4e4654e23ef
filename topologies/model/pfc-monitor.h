/*
 * disaggsim: watches a lossless fabric's pauses: pause chains and deadlocks.
 */
#ifndef DISAGGSIM_PFC_MONITOR_H
#define DISAGGSIM_PFC_MONITOR_H

#include "fabric-net-device.h"

#include "ns3/event-id.h"
#include "ns3/nstime.h"
#include "ns3/object.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace ns3
{

class ClosTopology;
class FabricSwitch;

/**
 * \brief Observes PFC on every port of a fabric (ClosTopology creates one for the lossless
 * fabric; topologies/doc/lossless.md).
 *
 * Pause chain: a port paused by a switch whose own egress ports are paused in the same class
 * extends their chain: chain (port) = 1 + the longest chain among the paused ports of the
 * switch at the other end of its cable (1 if none).  GetLongestPauseChain is the largest
 * chain seen: how far pause propagated upstream from a congestion point.
 *
 * Deadlock: from the first pause on, every DeadlockTimeout the monitor checks whether any
 * port transmitted a frame other than a pause frame since the last check; if none did while frames wait in paused
 * ports, the fabric is deadlocked (a cyclic buffer dependency, Hu et al. HotNets'16): the
 * simulation stops, IsDeadlocked () becomes true and GetDeadlockReport () names which port
 * waits on which.  The check stops rescheduling itself once no frame waits, and starts again
 * at the next pause, so an idle fabric ends its run.
 */
class PfcMonitor : public Object
{
  public:
    static TypeId GetTypeId ();
    PfcMonitor ();
    ~PfcMonitor () override;

    /// Watch every host NIC and switch port of \p topology (after Build).
    void Watch (Ptr<ClosTopology> topology);

    uint32_t GetLongestPauseChain () const
    {
        return m_longestChain;
    }

    bool IsDeadlocked () const
    {
        return m_deadlocked;
    }

    /// \returns one line per waiting port: "<port> waits on <peer port>", then one per
    /// pausing switch ingress: "<port> pauses class c upstream holding B bytes" (empty if
    /// no deadlock).
    const std::string& GetDeadlockReport () const
    {
        return m_report;
    }

    /// \returns a port's name in reports: "host H" or "switch node N port P".
    static std::string PortName (const FabricNetDevice* port);

  protected:
    void DoDispose () override;

  private:
    void PfcReceived (FabricNetDevice* port, uint8_t classEnable, uint16_t quanta);
    void Check ();
    uint64_t TransmittedFrames () const;
    /// \returns the port at the other end of \p port's cable.
    static FabricNetDevice* Peer (const FabricNetDevice* port);

    Time m_timeout;
    std::vector<Ptr<FabricNetDevice>> m_ports;
    std::vector<Ptr<FabricSwitch>> m_switches;
    std::unordered_map<const FabricNetDevice*, uint32_t> m_chain; //!< chain while paused
    uint32_t m_longestChain{0};
    EventId m_check;
    uint64_t m_lastTx{0};
    bool m_deadlocked{false};
    std::string m_report;
};

} // namespace ns3

#endif // DISAGGSIM_PFC_MONITOR_H
