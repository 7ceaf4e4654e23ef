/*
 * disaggsim: in-band network telemetry (INT) records that switch egress ports stamp on a
 * frame that asks for them (FabricHeader::intRequested), for HPCC (Li et al. SIGCOMM'19 §3.2).
 */
#ifndef DISAGGSIM_INT_TAG_H
#define DISAGGSIM_INT_TAG_H

#include "fabric-header.h"

#include "ns3/assert.h"
#include "ns3/tag.h"

#include <algorithm>
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

    /// Forget every record: only the hop count is written, since no reader looks past it
    /// (GetHop takes i < GetNHops ()), so reopening a slot touches one cache line, not the
    /// whole 176 B IntTag.
    void Reset ()
    {
        m_nHops = 0;
    }

    /// Become a copy of \p other's records: its hop count and its first GetNHops ()
    /// records, not the unused rest of the block (HPCC keeps the last ACK's records).
    void CopyHops (const IntTag& other)
    {
        m_nHops = other.m_nHops;
        std::copy_n (other.m_hops.begin (), m_nHops, m_hops.begin ());
    }

  private:
    uint32_t m_nHops{0};
    std::array<IntHop, kIntMaxHops> m_hops{};
};

/**
 * \returns the key of a frame's INT records (IntRecords::Open): FabricHeader::sackSeq of a
 * frame that requests INT or carries echoed records; 0 = the frame has none.  Not the
 * Packet's uid: the fabric's hop path never loads the Packet (fabric-queue.h TakePtr), and a
 * transport may send one Packet object as the placeholder of many frames (RoceHost).
 */
inline uint32_t
IntFrameKey (const FabricHeader& header)
{
    return header.sackSeq;
}

/**
 * \brief Where the INT records of frames in flight live: out of band, in a pool of slots
 * that a frame's key (IntFrameKey) indexes directly, so that a hop appends a record with one
 * indexed store instead of removing and re-adding a packet tag (which cost HPCC about 7,000
 * instructions per data packet, bench/RESULTS.md "RoCEv2") or a hash lookup.  The sender
 * opens a frame's records (Open) and carries the key in FabricHeader::sackSeq; each switch
 * egress appends (At + PushHop); the receiver hands the records of the data frame it answers
 * to its ACK by giving the ACK the same key (no copy); the sender reads them in place and
 * closes them (Close).  Records of a frame dropped on a lossy fabric stay open until Clear
 * (a 192 B slot each).  Single-threaded, like ns-3's default simulator.
 *
 * Storage: closed slots are reused through a free list, so a frame's records cost no
 * allocation once the pool has grown to the frames in flight (a node-based
 * std::unordered_map allocated and freed one node per packet: 5 % of roce-hpcc's profile,
 * bench/RESULTS.md "Speed (one sitting, 2026-11-27)"; a robin_map keyed by the Packet's uid
 * cost a hash lookup per hop).  Which slot a frame gets does not enter any result.
 */
class IntRecords
{
  public:
    /// Open empty records for a frame about to be sent.  \returns their key (>= 1), which the
    /// frame carries in FabricHeader::sackSeq (IntFrameKey).
    static uint32_t Open ()
    {
        Pool& pool = Store ();
        ++pool.open;
        if (pool.free.empty ())
        {
            pool.slots.emplace_back ();
            return static_cast<uint32_t> (pool.slots.size ());
        }
        const uint32_t slot = pool.free.back ();
        pool.free.pop_back ();
        pool.slots[slot].records.Reset ();
        return slot + 1;
    }

    /// \returns the open records of key \p key (valid until the next Open).
    static IntTag& At (uint32_t key)
    {
        Pool& pool = Store ();
        NS_ASSERT_MSG (key != 0 && key <= pool.slots.size (), "IntRecords: no records " << key);
        return pool.slots[key - 1].records;
    }

    /// Close the records of key \p key (open): the slot is reused.
    static void Close (uint32_t key)
    {
        Pool& pool = Store ();
        NS_ASSERT_MSG (key != 0 && key <= pool.slots.size (), "IntRecords: no records " << key);
        pool.free.push_back (key - 1);
        --pool.open;
    }

    /// \returns the records open (those in flight, and those dropped).
    static size_t GetSize ()
    {
        return Store ().open;
    }

    /// Forget every record (between simulations).
    static void Clear ()
    {
        Pool& pool = Store ();
        pool.slots.clear ();
        pool.free.clear ();
        pool.open = 0;
    }

  private:
    /// One frame's records on a cache-line boundary: the 176 B IntTag (vtable pointer, hop
    /// count, 5 hops of 32 B) packed at a 176 B stride straddles 2.5 lines on average over
    /// its first 3 hops (a Clos path's), aligned exactly 2 (the count and hops 0-2 in 112 B).
    struct alignas (64) Slot
    {
        IntTag records;
    };

    struct Pool
    {
        std::vector<Slot> slots; //!< key k's records at k - 1
        std::vector<uint32_t> free; //!< closed slots, to reuse
        size_t open{0};             //!< slots open
    };

    static Pool& Store ()
    {
        static Pool pool;
        return pool;
    }
};

} // namespace ns3

#endif // DISAGGSIM_INT_TAG_H
