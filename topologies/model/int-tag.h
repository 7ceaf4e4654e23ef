/*
 * disaggsim: in-band network telemetry (INT) records that switch egress ports stamp on a
 * frame that asks for them (FabricHeader::intRequested), for HPCC (Li et al. SIGCOMM'19 §3.2).
 */
#ifndef DISAGGSIM_INT_TAG_H
#define DISAGGSIM_INT_TAG_H

#include "fabric-header.h"

#include "ns3/tag.h"

#include <tsl/robin_map.h>

#include <array>
#include <cstdint>
#include <vector>

namespace ns3
{

/// Hops an INT header holds (HPCC's simulator IntHeader::maxHop = 5; a Clos path has 3).
constexpr uint32_t kIntMaxHops = 5;

/**
 * Wire bytes of the INT header a frame that asks for telemetry carries, whatever the number
 * of hops stamped: a 2 B hop count and kIntMaxHops records of 8 B (HPCC's simulator,
 * simulation/src/network/utils/int-header.{h,cc}: IntHeader::GetStaticSize = sizeof hop[5]
 * + sizeof nhop = 42 B, fixed so that a switch never grows a frame).  The transport counts
 * them in its packet size; the records themselves travel out of band in an IntTag.
 */
constexpr uint32_t kIntHeaderBytes = 2 + 8 * kIntMaxHops;

/**
 * \brief One hop's INT record, stamped when the frame starts transmission at a switch egress
 * port (HPCC SIGCOMM'19 §3.2, Figure 5: qLen, txBytes, ts, B).
 *
 * Full precision here; HPCC's 8 B wire record quantizes them (bytes in 128 B units, queue in
 * 80 B units, 24-bit ns time), which only the wire size above models.
 */
struct IntHop
{
    uint64_t timeNs{0};    ///< ts: when the frame started transmission at the port
    uint64_t txBytes{0};   ///< txBytes: wire bytes the port sent before this frame
    uint32_t qlenBytes{0}; ///< qLen: wire bytes waiting in the port's egress queue
    uint64_t rateBps{0};   ///< B: the port's line rate in bit/s
};

/**
 * \brief The INT records of one frame: appended hop by hop at switch egress
 * (FabricNetDevice, for frames with FabricHeader::intRequested set), read by the receiver
 * and echoed to the sender in its ACK.  They travel out of band in IntRecords, keyed by the
 * packet; the class is a Tag so that it can also ride on a packet (and print).
 */
class IntTag : public Tag
{
  public:
    static TypeId GetTypeId ();
    TypeId GetInstanceTypeId () const override;
    uint32_t GetSerializedSize () const override;
    void Serialize (TagBuffer buffer) const override;
    void Deserialize (TagBuffer buffer) override;
    void Print (std::ostream& os) const override;

    /// Append \p hop; a frame past kIntMaxHops hops keeps its first kIntMaxHops records.
    void PushHop (const IntHop& hop);

    uint32_t GetNHops () const
    {
        return m_nHops;
    }

    const IntHop& GetHop (uint32_t i) const
    {
        return m_hops[i];
    }

  private:
    uint32_t m_nHops{0};
    std::array<IntHop, kIntMaxHops> m_hops{};
};

/**
 * \returns the key of a frame's INT records (IntRecords): its source host and
 * FabricHeader::sackSeq.  A transport that sets intRequested, or puts records on a frame,
 * gives that frame a sackSeq unique among its host's such frames in flight and never 0
 * (RoceHost::NextIntKey), so that a frame without records (sackSeq 0) finds none.  Not the
 * Packet's uid: the fabric's hop path never loads the Packet (fabric-queue.h TakePtr), and a
 * transport may send one Packet object as the placeholder of many frames (RoceHost).
 */
inline uint64_t
IntFrameKey (const FabricHeader& header)
{
    return (uint64_t (header.srcHost) << 32) | header.sackSeq;
}

/**
 * \brief Where the INT records of frames in flight live: out of band, keyed by the frame
 * (IntFrameKey: source host and a per-host key in FabricHeader::sackSeq), so that a hop appends a
 * record with one hash lookup instead of removing and re-adding a packet tag (which cost
 * HPCC about 7,000 instructions per data packet, bench/RESULTS.md "RoCEv2").  The switch
 * egress appends (Stamp); the receiver takes a data packet's records and puts them on its
 * ACK (Take, Put); the sender takes the ACK's.  Records of a frame dropped on a lossy fabric
 * stay until Clear (about 180 B each).  Single-threaded, like ns-3's default simulator.
 *
 * Storage: the records sit in a pool of slots reused through a free list, and an
 * open-addressing map (tsl::robin_map) takes a key to its slot, so a frame's records cost
 * no allocation once the pool has grown to the frames in flight (a node-based
 * std::unordered_map allocated and freed one node per packet: 5 % of roce-hpcc's profile,
 * bench/RESULTS.md "Speed (one sitting, 2026-11-27)").  Lookups only: no result depends
 * on the order.
 */
class IntRecords
{
  public:
    /// \returns the records of the frame with IntFrameKey \p key, created empty if it has
    /// none (valid until the next Stamp or Put).
    static IntTag& Stamp (uint64_t key)
    {
        Pool& pool = Store ();
        auto [it, inserted] = pool.slotOf.try_emplace (key, 0);
        if (inserted)
        {
            it.value () = pool.Allocate ();
        }
        return pool.slots[it->second];
    }

    /// Move the records of the frame with key \p key into \p records and forget them.
    /// \returns false (and leaves \p records alone) if it has none.
    static bool Take (uint64_t key, IntTag& records)
    {
        Pool& pool = Store ();
        auto it = pool.slotOf.find (key);
        if (it == pool.slotOf.end ())
        {
            return false;
        }
        const uint32_t slot = it->second;
        records = pool.slots[slot];
        pool.free.push_back (slot);
        pool.slotOf.erase (it);
        return true;
    }

    /// \returns the records of the frame with key \p key, or nullptr if it has none (valid
    /// until the next Stamp or Put).
    static const IntTag* Find (uint64_t key)
    {
        Pool& pool = Store ();
        auto it = pool.slotOf.find (key);
        return it == pool.slotOf.end () ? nullptr : &pool.slots[it->second];
    }

    /// Forget the records of the frame with key \p key (if it has any).
    static void Erase (uint64_t key)
    {
        Pool& pool = Store ();
        auto it = pool.slotOf.find (key);
        if (it != pool.slotOf.end ())
        {
            pool.free.push_back (it->second);
            pool.slotOf.erase (it);
        }
    }

    /**
     * Hand the records of the frame with key \p from to the frame with key \p to, which has
     * none, without copying them (a receiver echoing a data frame's records on its ACK).
     * \returns false (nothing changes) if \p from has none.
     */
    static bool Rekey (uint64_t from, uint64_t to)
    {
        Pool& pool = Store ();
        auto it = pool.slotOf.find (from);
        if (it == pool.slotOf.end ())
        {
            return false;
        }
        const uint32_t slot = it->second;
        pool.slotOf.erase (it);
        auto [target, inserted] = pool.slotOf.try_emplace (to, slot);
        if (!inserted)
        {
            pool.free.push_back (target->second);
            target.value () = slot;
        }
        return true;
    }

    /// Give the frame with key \p key the records \p records.
    static void Put (uint64_t key, const IntTag& records)
    {
        Stamp (key) = records;
    }

    /// \returns the packets holding records (those in flight, and those dropped).
    static size_t GetSize ()
    {
        return Store ().slotOf.size ();
    }

    /// Forget every record (between simulations).
    static void Clear ()
    {
        Pool& pool = Store ();
        pool.slotOf.clear ();
        pool.slots.clear ();
        pool.free.clear ();
    }

  private:
    struct Pool
    {
        tsl::robin_map<uint64_t, uint32_t> slotOf; //!< IntFrameKey -> its slot
        std::vector<IntTag> slots;
        std::vector<uint32_t> free; //!< slots to reuse

        /// \returns an empty slot.
        uint32_t Allocate ()
        {
            if (free.empty ())
            {
                slots.emplace_back ();
                return static_cast<uint32_t> (slots.size () - 1);
            }
            const uint32_t slot = free.back ();
            free.pop_back ();
            slots[slot] = IntTag ();
            return slot;
        }
    };

    static Pool& Store ()
    {
        static Pool pool;
        return pool;
    }
};

} // namespace ns3

#endif // DISAGGSIM_INT_TAG_H
