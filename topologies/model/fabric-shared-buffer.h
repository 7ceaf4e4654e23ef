/*
 * disaggsim: a switch's buffer shared by all its ports.
 */
#ifndef DISAGGSIM_FABRIC_SHARED_BUFFER_H
#define DISAGGSIM_FABRIC_SHARED_BUFFER_H

#include "fabric-queue.h"

#include "ns3/object.h"
#include "ns3/traced-value.h"

namespace ns3
{

class FabricNetDevice;

/**
 * \brief The packet memory of a shared-memory switch: one pool of SizeBytes wire bytes that
 * every egress queue of the switch draws from, the way commodity datacenter switches are
 * built (Choudhury & Hahne, "Dynamic queue length thresholds for shared-memory packet
 * switches", IEEE/ACM ToN 1998; HPCC's simulator, SwitchMmu::buffer_size).
 *
 * FabricQueue::Enqueue asks Admit for every arrival that fits its port's own limit, and
 * tells Release of every frame that leaves (transmitted or dropped).  This base admits while
 * the pool has room (a static complete-sharing policy); a memory-management unit with
 * per-ingress accounting and PFC (SwitchMmu) overrides both.  Occupancy counts wire bytes.
 */
class FabricSharedBuffer : public Object
{
  public:
    static TypeId GetTypeId ();
    FabricSharedBuffer ();
    ~FabricSharedBuffer () override;

    /**
     * Offer \p item, bound for \p egress, to the pool: \returns true and charges its wire
     * bytes if admitted (the caller then stores it), false if it must be dropped.  May set
     * CE in item.header (the queue reports the mark).
     */
    virtual bool Admit (FabricQueueItem& item, const FabricQueue& egress);

    /// A frame of \p wireBytes charged to \p ingressPort and \p trafficClass left the buffer.
    virtual void Release (uint32_t ingressPort, uint8_t trafficClass, uint32_t wireBytes);

    /**
     * \p item left \p egress (released; \p egress now holds the bytes behind it): may set
     * CE in item.header (the queue reports the mark).  The queue calls it only while
     * MarksOnDequeue (); the default does nothing.
     */
    virtual void OnDequeue (FabricQueueItem& item, const FabricQueue& egress);

    /// \returns true if OnDequeue is to be called for every frame leaving a queue.
    bool MarksOnDequeue () const
    {
        return m_marksOnDequeue;
    }

    /// The switch added \p port as its port \p index (FabricSwitch::AddPort, or
    /// SetSharedBuffer for the ports it already has); its cable is attached.  The default
    /// does nothing; a memory-management unit sizes the port's headroom here.
    virtual void AddPort (FabricNetDevice* port, uint32_t index);

    uint64_t GetSizeBytes () const
    {
        return m_sizeBytes;
    }

    /// \returns the wire bytes buffered now.
    uint64_t GetUsedBytes () const
    {
        return m_usedBytes;
    }

    /// \returns the largest GetUsedBytes () seen.
    uint64_t GetPeakBytes () const
    {
        return m_peakBytes;
    }

  protected:
    /// Charge \p wireBytes to the pool (the caller checked that they fit).
    void Charge (uint32_t wireBytes)
    {
        m_usedBytes += wireBytes;
        if (m_usedBytes > m_peakBytes)
        {
            m_peakBytes = m_usedBytes;
        }
        m_usedTrace = m_usedBytes;
    }

    /// Return \p wireBytes to the pool.
    void Uncharge (uint32_t wireBytes);

    bool m_marksOnDequeue{false}; //!< see MarksOnDequeue

  private:
    uint64_t m_sizeBytes{0};
    uint64_t m_usedBytes{0};
    uint64_t m_peakBytes{0};
    TracedValue<uint64_t> m_usedTrace;
};

} // namespace ns3

#endif // DISAGGSIM_FABRIC_SHARED_BUFFER_H
