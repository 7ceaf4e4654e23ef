/*
 * disaggsim: egress queue of a fabric port (base class).
 */
#ifndef DISAGGSIM_FABRIC_QUEUE_H
#define DISAGGSIM_FABRIC_QUEUE_H

#include "fabric-header.h"

#include "ns3/assert.h"
#include "ns3/nstime.h"
#include "ns3/object.h"
#include "ns3/packet.h"
#include "ns3/traced-callback.h"
#include "ns3/traced-value.h"

#include <new>

namespace ns3
{

class FabricSharedBuffer;

/// FabricQueueItem::ingressPort of a frame that its own node handed down (a host's frame):
/// it entered through no port.
constexpr uint32_t kFabricNoIngressPort = UINT32_MAX;

/**
 * \returns \p from's reference, leaving \p from null, without touching the object: ns-3.37's
 * Ptr has no move constructor, and its copy-then-release writes the reference count twice.
 * On a frame that waited in a queue that count is a cache miss; a switch that only moves the
 * frame's Ptr along (queue item, channel event, queue item) never loads the Packet at all
 * (bench/RESULTS.md, "Speed, second sitting").
 */
template <typename T>
Ptr<T>
TakePtr (Ptr<T>& from)
{
    T* raw = PeekPointer (from);
    // Reusing from's storage ends its lifetime without its destructor's Unref: the one
    // reference it held now belongs to the returned Ptr.
    new (&from) Ptr<T> ();
    return Ptr<T> (raw, false);
}

/**
 * \brief One frame waiting at an egress port: the packet, its out-of-band fabric header, the
 * earliest time its transmission may start (cut-through: see FabricNetDevice), the
 * switch port it came in through (FabricSwitch::AddPort's index; kFabricNoIngressPort for a
 * host's own frame), which a shared buffer charges it to (per-ingress accounting, as
 * htsim's LosslessInputQueue and HPCC's SwitchMmu keep it), and its wire bytes.
 *
 * wireBytes = packet size + kFabricHeaderBytes, computed once where the frame enters the
 * fabric (the sending host's port) and carried with it hop by hop (FabricChannel,
 * FabricSwitch), so that queues, shared buffers and ports read it here instead of from the
 * Packet.  Moving an item moves its packet reference without touching the Packet (TakePtr).
 */
struct FabricQueueItem
{
    Ptr<Packet> packet;
    FabricHeader header;
    Time notBefore;
    uint32_t ingressPort{kFabricNoIngressPort};
    uint32_t wireBytes{0}; ///< packet->GetSize () + kFabricHeaderBytes

    FabricQueueItem () = default;

    /// A frame of \p frame (a new reference) with its wire bytes read from the packet.
    FabricQueueItem (const Ptr<Packet>& frame, const FabricHeader& frameHeader, Time start,
                     uint32_t ingress = kFabricNoIngressPort)
          : packet (frame)
          , header (frameHeader)
          , notBefore (start)
          , ingressPort (ingress)
          , wireBytes (frame->GetSize () + kFabricHeaderBytes)
    {
    }

    /// A frame whose \p frameWireBytes are known: takes \p frame's reference (TakePtr; \p frame
    /// is left null) and does not touch the Packet.
    FabricQueueItem (Ptr<Packet>& frame, const FabricHeader& frameHeader, Time start,
                     uint32_t ingress, uint32_t frameWireBytes)
          : packet (TakePtr (frame))
          , header (frameHeader)
          , notBefore (start)
          , ingressPort (ingress)
          , wireBytes (frameWireBytes)
    {
    }

    FabricQueueItem (const FabricQueueItem&) = default;
    FabricQueueItem& operator= (const FabricQueueItem&) = default;

    /// Moves \p other's packet reference (TakePtr) and copies the rest.
    FabricQueueItem (FabricQueueItem&& other) noexcept
          : packet (TakePtr (other.packet))
          , header (other.header)
          , notBefore (other.notBefore)
          , ingressPort (other.ingressPort)
          , wireBytes (other.wireBytes)
    {
    }

    /// Releases this item's packet, then moves \p other's reference here (TakePtr).
    FabricQueueItem& operator= (FabricQueueItem&& other) noexcept
    {
        if (this != &other)
        {
            Packet* held = PeekPointer (packet);
            new (&packet) Ptr<Packet> (TakePtr (other.packet)); // the reference moves
            if (held != nullptr)
            {
                held->Unref (); // the reference this item held (its lifetime ended above)
            }
            header = other.header;
            notBefore = other.notBefore;
            ingressPort = other.ingressPort;
            wireBytes = other.wireBytes;
        }
        return *this;
    }

    /// \returns the frame's wire bytes: packet bytes + kFabricHeaderBytes.
    uint32_t GetWireBytes () const
    {
        NS_ASSERT_MSG (wireBytes != 0 || !packet, "FabricQueueItem: wireBytes not set");
        return wireBytes;
    }
};

/**
 * \brief Who is told of each frame a FabricQueue hands to its port (SetDequeueListener).
 *
 * A direct virtual call instead of the Dequeue trace source's ns-3 Callback (a TracedCallback
 * list walk, then two std::function layers) for the one sink that is on every frame's path:
 * a RoCE host's scheduler, told at each dequeue of its NIC's queue (transports/roce).  Like
 * FabricFrameSink for received frames.  The listener must outlive its registration; the
 * owner clears it in DoDispose.
 */
class FabricDequeueListener
{
  public:
    virtual ~FabricDequeueListener () = default;
    /// \p item left the queue for transmission; \p bytesBefore, the occupancy in wire bytes
    /// before it left (the Dequeue trace's arguments, called just before that trace).
    virtual void NotifyDequeue (const FabricQueueItem& item, uint32_t bytesBefore) = 0;
};

/**
 * \brief Egress queue of a FabricNetDevice: the seam where transports plug in their port
 * disciplines (DropTailEcnQueue for TCP/DCTCP; a priority queue for pFabric).
 *
 * The base class does the byte accounting, the MaxBytes limit, the statistics (peak and
 * time-averaged occupancy, drops, CE marks) and the trace sources; subclasses implement
 * DoEnqueue/DoDequeue.  Occupancy counts wire bytes (packet + 18 B frame header).
 * MaxBytes = 0 means unlimited (host NICs by default).  A discipline that stores frames its
 * own way must hand back each frame's ingressPort and trafficClass unchanged (DoDequeue,
 * DoSelectVictim): a shared buffer releases the frame from that (ingress, class).
 *
 * Traffic classes and pause: Dequeue (item, now, pausedClasses) skips the classes whose bit
 * is set in pausedClasses (bit c = FabricHeader::trafficClass c, paused by PFC).  A
 * discipline with per-class storage (StrictPriorityQueue) serves the best unpaused class;
 * a class-blind one (the default DoDequeueUnpaused) keeps every class in one order, so it
 * sends nothing while any class is paused, as a port under an 802.3x link-level PAUSE.  With
 * every frame in one class (every transport but pHost) the two rules agree.
 *
 * Shared buffer: a switch may attach a FabricSharedBuffer (SetSharedBuffer) that every one of
 * its ports' queues draws from.  An arrival that fits the port's MaxBytes must then also be
 * admitted by the shared buffer (else it is dropped), and every frame that leaves (dequeued
 * or dropped from the buffer) is released to it.  Without one (the default) nothing changes.
 *
 * Drops: every discipline reports every drop through the one Drop trace and
 * GetDroppedPackets().  When an arriving frame does not fit, Enqueue asks the subclass
 * (DoSelectVictim) for a buffered frame to drop instead, as many times as needed; the default
 * answer is "none" (drop-tail: the arriving frame is dropped).  A priority discipline (pFabric,
 * SIGCOMM'13 §4.2) evicts its least urgent frame there.  A subclass that drops a buffered frame
 * at any other time (e.g. an AQM dropping at the head) removes it from its storage and calls
 * DropBuffered.  The hook runs only on overflow: an arrival that fits costs no virtual call
 * beyond DoEnqueue.
 */
class FabricQueue : public Object
{
  public:
    static TypeId GetTypeId ();
    FabricQueue ();
    ~FabricQueue () override;

    /**
     * Offer a frame to the queue.  If it does not fit (MaxBytes != 0 and occupancy + its wire
     * bytes > MaxBytes), DoSelectVictim may evict buffered frames to make room (each one a
     * drop: Drop trace, GetDroppedPackets).  \returns false if the arriving frame was dropped
     * (the Drop trace fired for it).  May set CE in item.header (the Mark trace fires).
     */
    bool Enqueue (FabricQueueItem&& item);

    /// Enqueue at \p now, which must be Simulator::Now (): for callers that already hold
    /// it (the port's hop path), which saves a Simulator::Now () per frame.
    bool Enqueue (FabricQueueItem&& item, Time now);

    /**
     * Enqueue immediately followed by Dequeue, for a frame that reaches an empty queue of an
     * idle port and so leaves at once: the same counters, peak, trace calls and (zero)
     * occupancy-time integral, without storing the frame.  \returns false, having done
     * nothing, unless the queue is empty, the frame fits, and the discipline allows it
     * (PassesLoneFrame); then use Enqueue.
     */
    bool PassThrough (const FabricQueueItem& item);

    /// Remove the next frame to transmit into \p item.  \returns false if the queue is empty.
    bool Dequeue (FabricQueueItem& item);

    /// Dequeue at \p now, which must be Simulator::Now () (see Enqueue (item, now)).
    bool Dequeue (FabricQueueItem& item, Time now)
    {
        return DequeueUnpaused (item, now, 0);
    }

    /**
     * Dequeue at \p now the next frame of a class not paused: bit c of \p pausedClasses set
     * means class c may not be sent (see the class description).  With no bit set this is
     * Dequeue (item, now).  \returns false if no frame may leave.
     */
    bool Dequeue (FabricQueueItem& item, Time now, uint8_t pausedClasses)
    {
        return DequeueUnpaused (item, now, pausedClasses);
    }

    /// Draw every arrival from \p buffer as well (see the class description); nullptr
    /// detaches.  The switch that owns the buffer attaches it to each of its ports' queues.
    void SetSharedBuffer (FabricSharedBuffer* buffer)
    {
        m_sharedBuffer = buffer;
    }

    FabricSharedBuffer* GetSharedBuffer () const
    {
        return m_sharedBuffer;
    }

    /// Call \p listener at every frame's dequeue, before the Dequeue trace (at most one;
    /// nullptr detaches).  Not owned.
    void SetDequeueListener (FabricDequeueListener* listener)
    {
        m_dequeueListener = listener;
    }

    bool IsEmpty () const
    {
        return m_nPackets == 0;
    }

    uint32_t GetNBytes () const
    {
        return m_nBytes;
    }

    uint32_t GetNPackets () const
    {
        return m_nPackets;
    }

    uint32_t GetMaxBytes () const
    {
        return m_maxBytes;
    }

    void SetMaxBytes (uint32_t maxBytes)
    {
        m_maxBytes = maxBytes;
    }

    /// \returns the largest occupancy in bytes seen since the last ResetStatistics().
    uint32_t GetPeakBytes () const
    {
        return m_peakBytes;
    }

    /// \returns the time-averaged occupancy in bytes since the last ResetStatistics().
    double GetMeanBytes () const;

    uint64_t GetDroppedPackets () const
    {
        return m_droppedPackets;
    }

    uint64_t GetMarkedPackets () const
    {
        return m_markedPackets;
    }

    uint64_t GetEnqueuedPackets () const
    {
        return m_enqueuedPackets;
    }

    /// Restart peak/mean/drop/mark statistics at the current simulation time.
    void ResetStatistics ();

    /**
     * Admission decided before the frame exists: drop an arrival of \p wireBytes with
     * \p header now, counted exactly as Enqueue would count it, if Enqueue would drop it
     * outright (the queue is full and the discipline evicts nothing for it: DoRefusesArrival).
     * A sender that asks first need not build a frame that its own NIC refuses, which in an
     * incast is most of them (bench/RESULTS.md, incast (c)).  Declines (returns false, changes
     * nothing) while the Drop trace has a sink, since a sink is owed the frame.
     * \returns true if the arrival was dropped and counted.
     */
    bool DropIfRefused (const FabricHeader& header, uint32_t wireBytes);

    /// Signature of the Enqueue/Dequeue/Drop/Mark trace sources: the frame and the occupancy in
    /// bytes before the operation (for a drop: before the dropped frame left, or at the
    /// arrival of a dropped arriving frame).
    typedef void (*ItemTracedCallback) (const FabricQueueItem& item, uint32_t bytesBefore);

  protected:
    /**
     * Subclass hook: true if DoEnqueue of a frame into the empty queue followed by DoDequeue
     * has no effect beyond returning that frame (no mark, no drop, no state), so PassThrough
     * may skip both.  Default false.  A subclass of a discipline that answers true and
     * overrides DoEnqueue or DoDequeue must answer again.
     */
    virtual bool PassesLoneFrame () const;
    /// Subclass hook: store \p item, or return false to have it dropped.
    virtual bool DoEnqueue (FabricQueueItem&& item) = 0;
    /// Subclass hook: remove the next frame (the queue is not empty); \p now is
    /// Simulator::Now ().
    virtual FabricQueueItem DoDequeue (Time now) = 0;
    /**
     * Subclass hook for Dequeue with paused classes (\p pausedClasses != 0, the queue is not
     * empty): remove the next frame of an unpaused class into \p item and return true, or
     * return false if none may leave.  The default is the class-blind rule: false (nothing
     * leaves while any class is paused).
     */
    virtual bool DoDequeueUnpaused (Time now, uint8_t pausedClasses, FabricQueueItem& item);
    /**
     * Subclass hook, called by Enqueue only when \p arriving does not fit.  Either remove one
     * buffered frame from the subclass's storage, move it into \p victim and return true (it
     * is dropped: the base accounts for it as DropBuffered does, then checks the fit again
     * and may call this again), or return false to have \p arriving dropped.  The default
     * returns false: drop-tail.
     */
    virtual bool DoSelectVictim (const FabricQueueItem& arriving, FabricQueueItem& victim);
    /**
     * Subclass hook for DropIfRefused, called only when an arrival with \p arriving does not
     * fit into a non-empty queue: true if DoSelectVictim would return false for it at once
     * (no eviction).  Must agree with DoSelectVictim; the default (drop-tail) returns true.
     */
    virtual bool DoRefusesArrival (const FabricHeader& arriving) const;
    /**
     * Account for a buffered frame that the subclass has already removed from its storage and
     * will not transmit: occupancy and packet count fall, the drop counter rises, the Drop
     * trace fires (with the occupancy before the frame left).
     */
    void DropBuffered (const FabricQueueItem& item);
    /// Subclass hook: called after an accepted frame was stored, to report a CE mark.
    void NotifyMarked (const FabricQueueItem& item, uint32_t bytesBefore);

  private:
    /// Dequeue: the next frame of a class not in \p pausedClasses (any if 0).
    bool DequeueUnpaused (FabricQueueItem& item, Time now, uint8_t pausedClasses);
    /// Add the occupancy since the last change to the time integral; \p now = Simulator::Now ().
    void AccumulateOccupancy (Time now);
    /// DropBuffered at \p now = Simulator::Now ().
    void DropBufferedAt (const FabricQueueItem& item, Time now);

    uint32_t m_maxBytes{0};
    FabricSharedBuffer* m_sharedBuffer{nullptr}; //!< the switch's, not owned (or none)
    FabricDequeueListener* m_dequeueListener{nullptr}; //!< not owned (or none)
    uint32_t m_nBytes{0};
    uint32_t m_nPackets{0};
    uint32_t m_peakBytes{0};
    double m_byteSteps{0};
    Time m_statsStart;
    Time m_lastChange;
    uint64_t m_droppedPackets{0};
    uint64_t m_markedPackets{0};
    uint64_t m_enqueuedPackets{0};
    TracedValue<uint32_t> m_bytesInQueue;
    TracedCallback<const FabricQueueItem&, uint32_t> m_enqueueTrace;
    TracedCallback<const FabricQueueItem&, uint32_t> m_dequeueTrace;
    TracedCallback<const FabricQueueItem&, uint32_t> m_dropTrace;
    TracedCallback<const FabricQueueItem&, uint32_t> m_markTrace;
};

} // namespace ns3

#endif // DISAGGSIM_FABRIC_QUEUE_H
